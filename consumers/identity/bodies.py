"""Message bodies (payments, personal data): who may read them, and data with them hidden.

The one rule every path that touches a body asks, read from the user's scope (grants.py) with
the roles' permissions (roles.py).
"""

from __future__ import annotations

from .grants import scope_of
from .roles import REQUEST

HIDDEN_BODY = "(hidden: body searches are for operators only)"


def may_read_bodies(user, cluster: str | None = None, *, group: str | None = None, topic: str | None = None) -> bool:
    """Message bodies (payments, personal data: dead letters, messages found on the Find page)
    and anything that reads them: searches by body, exports, redrives. The one rule every path
    that touches a body asks: the operator role, on the group (a dead-letter queue's) or the
    topic (a message's) when one is named."""
    scope = scope_of(user)
    if group is not None:
        return scope.may(REQUEST, cluster, group)
    if topic is not None:
        return scope.may_topic(REQUEST, cluster, topic)
    return scope.may_somewhere(REQUEST)


def hide_bodies(user, data):
    """`data` (JSON-like: audit details, a redrive's selection, a request's params) as `user` may
    see it: below operator every "body" value (a search typed to match message bodies, which
    gives away part of a body) is replaced. The one redaction every viewer-visible path uses."""
    if may_read_bodies(user):
        return data
    return _hidden(data)


def _hidden(data):
    if isinstance(data, dict):
        return {k: (HIDDEN_BODY if k == "body" and v not in (None, "") else _hidden(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [_hidden(v) for v in data]
    return data
