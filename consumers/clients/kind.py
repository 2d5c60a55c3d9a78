"""Consumption verification as a kind of change: what the workflow calls for one."""

from __future__ import annotations

from ..changes import kinds, runs
from ..changes.models import ChangeRequest, State
from ..changes.services import requeue
from ..jobs import claims
from . import verify
from .verify_run import execute_verify

run = runs.runner(execute_verify)


def _api_create(*, actor, cluster, group: str, params: dict, reason: str) -> ChangeRequest:
    return verify.request_verify(actor=actor, cluster=cluster, group=group, client_id=params["client_id"],
                                 positions=params["messages"], reason=reason)  # fmt: skip


VERIFY = kinds.register(
    kinds.ChangeKind(
        name=ChangeRequest.Kind.VERIFY,
        execute=run,
        effect_changed=verify.effect_changed,
        api_params=verify.API_PARAMS,
        api_create=_api_create,
        detail_template="clients/_verified.html",
    )
)

# a verification whose worker went silent is taken over (and asks no client twice: verify_run.py)
claims.register(ChangeRequest, running=State.RUNNING, requeue=requeue, only={"kind": ChangeRequest.Kind.VERIFY})
