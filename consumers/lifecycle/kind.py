"""Group deletion and its undo (a restore) as kinds of change: what the workflow calls for them."""

from __future__ import annotations

from ..changes import kinds, runs
from ..changes.models import ChangeRequest, State
from ..changes.services import requeue
from ..jobs import claims
from ..web.apischema import Obj
from . import deletion
from .execute import execute_lifecycle

run = runs.runner(execute_lifecycle)


def _api_create(*, actor, cluster, group: str, params: dict, reason: str) -> ChangeRequest:
    return deletion.request_delete(actor=actor, cluster=cluster, group=group, reason=reason)


DELETE = kinds.register(
    kinds.ChangeKind(
        name=ChangeRequest.Kind.DELETE,
        execute=run,
        moved_since=deletion.moved_since,
        effect_changed=deletion.effect_changed,
        actions={"refresh": deletion.refresh_delete, "undo": deletion.undo_delete},
        api_params=Obj({}),  # nothing to say but the group and the reason
        api_create=_api_create,
        detail_template="lifecycle/_deleted.html",
    )
)
# made only as a delete's undo
RESTORE = kinds.register(
    kinds.ChangeKind(name=ChangeRequest.Kind.RESTORE, execute=run, detail_template="lifecycle/_deleted.html")
)

# a deletion or restore whose worker went silent is taken over by the next execute_change
claims.register(ChangeRequest, running=State.RUNNING, requeue=requeue,
                only={"kind__in": [ChangeRequest.Kind.DELETE, ChangeRequest.Kind.RESTORE]})  # fmt: skip
