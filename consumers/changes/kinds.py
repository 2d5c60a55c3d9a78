"""The kinds of change the workflow can carry. The workflow owns requests, their states, the
approval rules and the audit; it knows no kind by name. Each feature registers what its kind
does at the points the workflow reaches (its `kind.py`, imported when the app is ready), and
the workflow calls those hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from ..web.apischema import Obj
from .guards import ChangeRefused
from .models import ChangeRequest


def _nothing(*args, **kwargs) -> None:
    return None


@dataclass(frozen=True)
class ChangeKind:
    name: str
    # run an approved request in a worker (execute_change's body); returns a word for the log
    execute: Callable[[int], str]
    # the request ended before it ran (rejected, cancelled, expired): release what it holds
    ended_unrun: Callable[[ChangeRequest], None] = _nothing
    # what moved on the broker since the plan was read, for an approver about to decide
    moved_since: Callable[[ChangeRequest], list] | None = None
    # the request's effect read again from the broker: a refusal in words when it changed beyond
    # the tolerance since the plan was read (approval is bound to the effect, not to a time)
    effect_changed: Callable[[ChangeRequest], str | None] = _nothing
    # further decisions on a request of this kind: name -> fn(request, actor=, reason=)
    actions: dict[str, Callable[..., ChangeRequest]] = field(default_factory=dict)
    # POST /api/changes/ with this kind: the schema of its "params", and what makes the request
    # (fn(actor=, cluster=, group=, params=, reason=)); None: made on its own pages only
    api_params: Obj | None = None
    api_create: Callable[..., ChangeRequest] | None = None
    api_default: bool = False  # the kind of a POST /api/changes/ that names none
    # the other groups of the request's cluster it reads (a copy reset's source): whoever
    # decides must be allowed to see them too
    reads: Callable[[ChangeRequest], list[str]] = lambda request: []
    # what the request's page shows of this kind beside the plan table (a template, or "")
    detail_template: str = ""


_KINDS: dict[str, ChangeKind] = {}


def register(kind: ChangeKind) -> ChangeKind:
    _KINDS[kind.name] = kind
    return kind


def of(request: ChangeRequest) -> ChangeKind:
    try:
        return _KINDS[request.kind]
    except KeyError:
        raise ChangeRefused(_("no kind %(kind)r is registered") % {"kind": request.kind}, 500) from None


def creatable() -> dict[str, ChangeKind]:
    """The kinds a script may request through the API."""
    return {name: kind for name, kind in _KINDS.items() if kind.api_create is not None}
