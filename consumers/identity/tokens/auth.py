"""Bearer tokens as credentials, throttled apart from passwords (consumers/identity/tokens/throttle.py:
per token prefix and address, never locking password logins)."""

from __future__ import annotations

import datetime as dt

from . import services, throttle


class TokenLockedOut(Exception):
    def __init__(self, left: dt.timedelta):
        super().__init__(f"locked for {left}")
        self.left = left


def token_user(request, secret: str):
    """The token's user, or None when it is refused; TokenLockedOut when too many refusals of
    this prefix came from this address (checked before the token is)."""
    address = request.META.get("REMOTE_ADDR", "")
    prefix = throttle.bucket(services.prefix_of(secret))
    row = throttle.counted(prefix, address)
    left = throttle.locked_for(row)
    if left is not None:  # not counted again: the lock ends a cool-off after the last refusal
        raise TokenLockedOut(left)
    user = services.user_for(secret, remote_addr=address)
    if user is None:
        throttle.record_failure(prefix, address)
        left = throttle.locked_for(throttle.counted(prefix, address))
        if left is not None:  # the refusal that reaches the limit is answered as the lockout, as axes does
            raise TokenLockedOut(left)
    elif row is not None:
        throttle.clear(prefix, address)
    return user
