"""Users and their roles."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.db import transaction
from django.db.models import Q

from .roles import ROLE_PERMISSIONS, ROLES, app_label_of


class RoleError(ValueError):
    pass


@transaction.atomic
def ensure_roles() -> None:
    """Create any missing role group and give each its permissions (what migrations 0002, 0005
    and 0011 do; for databases emptied since, such as transactional test databases). Most
    permissions are this app's; django-axes's are looked up under its own app label."""
    from django.contrib.auth.models import Permission

    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        wanted = Q(pk__in=[])
        for app_label in {app_label_of(codename) for codename in codenames}:
            mine = [codename for codename in codenames if app_label_of(codename) == app_label]
            wanted |= Q(content_type__app_label=app_label, codename__in=mine)
        group.permissions.set(Permission.objects.filter(wanted))


@transaction.atomic
def create_or_update_user(
    username: str, role: str, password: str | None, *, update: bool = False, validate: bool = True
):
    """Create a user with exactly one role (or, with update=True, change an existing one).
    Admins also get Django admin access (is_staff)."""
    if role not in ROLES:
        raise RoleError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is not None and not update:
        raise RoleError(f"user {username!r} already exists (use --update to change it)")
    if user is None:
        if not password:
            raise RoleError("a new user needs a password")
        user = User(username=username)
    if password:
        if validate:
            validate_password(password, user)
        user.set_password(password)
    user.is_staff = role == "admin"
    user.save()
    groups = Group.objects.filter(name__in=ROLES)
    user.groups.remove(*groups)
    user.groups.add(Group.objects.get(name=role))
    return user
