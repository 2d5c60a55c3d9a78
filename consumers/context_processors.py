from django.conf import settings

from .identity import APPROVE, roles_of, scope_of, within


def roles(request):
    """The user's roles for the header; for approvers, how many requests wait (one query)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    context = {"user_roles": roles_of(user), "single_person_mode": settings.CHANGES_SINGLE_PERSON_MODE}
    from .alerts.selectors import firing_count, visible_to

    context["firing_alerts"] = firing_count(visible_to(user))
    if scope_of(user).may_somewhere(APPROVE):
        from .changes.selectors import pending_count

        context["pending_changes"] = pending_count(within(user))
    return context
