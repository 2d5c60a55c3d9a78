"""Users and their roles."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.db import transaction

from .roles import ROLE_PERMISSIONS, ROLES


class RoleError(ValueError):
    pass


@transaction.atomic
def ensure_roles() -> None:
    """Create any missing role group and give each its permissions (what migration 0002
    does; for databases emptied since, such as transactional test databases)."""
    from django.contrib.auth.models import Permission

    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.set(Permission.objects.filter(content_type__app_label="consumers", codename__in=codenames))


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
