"""Subscription config changes as a kind of change: what the workflow calls for one."""

from __future__ import annotations

from ..changes import kinds, runs
from ..changes.models import ChangeRequest, State
from ..changes.services import requeue
from ..jobs import claims
from ..web.apischema import Bool, Choice, Int, Obj, Str
from . import modes, services
from .execute import execute_config
from .modes_run import execute_mode

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


run = runs.runner(execute_config)


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


run_mode = runs.runner(execute_mode)


def _api_mode(*, actor, cluster, group: str, params: dict, reason: str) -> ChangeRequest:
    return modes.request_mode(actor=actor, cluster=cluster, group=group, topic=params["topic"], mode=params["mode"],
                              share=params.get("share"), reason=reason)  # fmt: skip


# the body of POST /api/changes/ with "kind": "mode": {"topic", "mode": POP or PULL, "share": popShareQueueNum}
MODE_PARAMS = Obj({"topic": Str(max_length=255, required=True), "mode": Choice(modes.MODES),
                   "share": Int(*modes.SHARE_RANGE)}, required=("topic", "mode"))  # fmt: skip
MODE = kinds.register(
    kinds.ChangeKind(
        name=ChangeRequest.Kind.MODE,
        execute=run_mode,
        moved_since=modes.moved_since,
        effect_changed=modes.effect_changed,
        actions={"refresh": modes.refresh, "undo": modes.undo},
        api_params=MODE_PARAMS,
        api_create=_api_mode,
        detail_template="subscriptions/_mode_changed.html",
    )
)

# a config change or mode switch whose worker went silent is taken over by the next execute_change
claims.register(ChangeRequest, running=State.RUNNING, requeue=requeue,
                only={"kind__in": [ChangeRequest.Kind.CONFIG, ChangeRequest.Kind.MODE]})  # fmt: skip
