from .roles import roles_of


def roles(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"user_roles": roles_of(user)}
