from .roles import APPROVE, REQUEST, VIEW, perm, roles_of


def roles(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "user_roles": roles_of(user),
        "can_view": user.has_perm(perm(VIEW)),
        "can_request": user.has_perm(perm(REQUEST)),
        "can_approve": user.has_perm(perm(APPROVE)),
    }
