"""Subscription config changes as a kind of change: what the workflow calls for one."""

from __future__ import annotations

from ..changes import kinds, notify
from ..changes.models import ChangeRequest, State
from ..changes.services import requeue
from ..jobs import claims
from ..web.apischema import Bool, Int, Obj
from . import services
from .execute import execute_config

# the range the form (forms.ConfigForm) and the service check too: one range everywhere
_RETRIES = services.EDITABLE["retryMaxTimes"]
# the body of POST /api/changes/ for a config change: {"set": {field: value}, "emergency": bool}
API_PARAMS = Obj(
    {
        "set": Obj(
            {
                "consumeEnable": Bool(),
                "retryMaxTimes": Int(_RETRIES.low, _RETRIES.high),
                "consumeMessageOrderly": Bool(),
                "consumeBroadcastEnable": Bool(),
            }
        ),
        "emergency": Bool(),
    },
    required=("set",),
)


def run(request_id: int) -> str:
    ended = execute_config(request_id)
    if ended is None:
        return "another worker has it"
    notify.decided(ended)
    return ended.state


def _api_create(*, actor, cluster, group: str, params: dict, reason: str) -> ChangeRequest:
    # the schema left out the fields not given and refused nulls: "set" is what to set
    return services.request_change(actor=actor, cluster=cluster, group=group, values=params["set"], reason=reason,
                                   emergency=bool(params.get("emergency")))  # fmt: skip


CONFIG = kinds.register(
    kinds.ChangeKind(
        name=ChangeRequest.Kind.CONFIG,
        execute=run,
        moved_since=services.moved_since,
        effect_changed=services.effect_changed,
        actions={"refresh": services.refresh, "undo": services.undo},
        api_params=API_PARAMS,
        api_create=_api_create,
        detail_template="subscriptions/_changed.html",
    )
)

# a config change whose worker went silent is taken over by the next execute_change
claims.register(ChangeRequest, running=State.RUNNING, requeue=requeue, only={"kind": ChangeRequest.Kind.CONFIG})
