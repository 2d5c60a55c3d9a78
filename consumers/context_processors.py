from django.conf import settings

from .roles import APPROVE, perm, roles_of


def roles(request):
    """The user's roles for the header; for approvers, how many requests wait (one query)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    context = {"user_roles": roles_of(user), "single_person_mode": settings.CHANGES_SINGLE_PERSON_MODE}
    from .alerts.selectors import firing_count

    context["firing_alerts"] = firing_count()
    if user.has_perm(perm(APPROVE)):
        from .changes.selectors import pending_count

        context["pending_changes"] = pending_count()
    return context
