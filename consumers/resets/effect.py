"""A reset's effect, and whether it still is what the approver approved.

The approver approves an effect, not a time: per queue, the messages the reset re-consumes
(target below the committed offset) or skips (above it). Targets are fixed when the plan is
read (a shift is counted from the committed offsets read then; "latest" is the end of each
queue when it runs), but the committed offsets move on under an online group, so the same
targets can mean a much larger replay minutes later. At approval and again when the run starts
the effect is recomputed from the broker; beyond the tolerance the approval (or the run) is
refused and the preview must be refreshed.

Tolerance: the effect may differ by `CHANGE_EFFECT_TOLERANCE_PERCENT` of the planned effect or
`CHANGE_EFFECT_TOLERANCE_MESSAGES`, whichever is larger, counted over the whole request (re-
consumed plus skipped), so one busy queue cannot hide in a large plan's total.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from ..rocketmq import AdminClient, RocketMQError
from ..rocketmq.models import MessageQueue


def planned(rows: list[dict]) -> dict[str, int | None]:
    """label -> messages moved as the plan was read (negative: re-consumed, positive: skipped)."""
    return {r["label"]: r["delta"] for r in rows if r["target"] is not None}


def recomputed(rows: list[dict], strategy: str, committed: dict, maxes: dict) -> dict[str, int | None]:
    """label -> messages the same targets would move now, from committed and max offsets read now
    (label -> offset; a missing committed offset: never committed, effect unknown as planned)."""
    effect = {}
    for row in rows:
        if row["target"] is None:
            continue
        label, now = row["label"], committed.get(row["label"])
        target = maxes.get(label, row["max"]) if strategy == "latest" else row["target"]
        effect[label] = None if now is None else target - now
    return effect


def moved(effect: dict[str, int | None]) -> tuple[int, int]:
    """(re-consumed, skipped) over every queue whose effect is known."""
    known = [d for d in effect.values() if d is not None]
    return sum(-d for d in known if d < 0), sum(d for d in known if d > 0)


def change(before: dict[str, int | None], after: dict[str, int | None]) -> str | None:
    """None when `after` is within the tolerance of `before`; else what changed, in words."""
    difference = sum(abs((after.get(label) or 0) - (delta or 0)) for label, delta in before.items())
    difference += sum(abs(d or 0) for label, d in after.items() if label not in before)
    was, now = moved(before), moved(after)
    size = was[0] + was[1]
    allowed = max(size * settings.CHANGE_EFFECT_TOLERANCE_PERCENT / 100, settings.CHANGE_EFFECT_TOLERANCE_MESSAGES)
    if difference <= allowed:
        return None
    return _(
        "the effect changed since the preview: %(was_reconsumed)s → %(reconsumed)s re-consumed, %(was_skipped)s → "
        "%(skipped)s skipped (%(difference)s messages apart, %(allowed)s allowed); refresh the preview"
    ) % {
        "was_reconsumed": was[0],
        "reconsumed": now[0],
        "was_skipped": was[1],
        "skipped": now[1],
        "difference": difference,
        "allowed": f"{allowed:.0f}",
    }


async def read_now(client: AdminClient, group: str, rows: list[dict]) -> tuple[dict, dict]:
    """(committed, max) offsets of the plan's queues now: one consume-stats request per broker.
    A broker that does not answer raises: the effect there cannot be known."""
    masters = (await client.topology.cluster_info(max_age=5.0)).masters()
    brokers = sorted({r["broker"] for r in rows})
    missing = [b for b in brokers if b not in masters]
    if missing:
        raise RocketMQError(f"{', '.join(missing)} not in the name server: the effect there is unknown")
    answers = await client.progress.consume_stats_many([(group, masters[b]) for b in brokers])
    committed, maxes = {}, {}
    wanted = {MessageQueue(r["topic"], r["broker"], r["queue_id"]): r["label"] for r in rows}
    for broker, answer in zip(brokers, answers, strict=True):
        if isinstance(answer, RocketMQError):
            raise RocketMQError(f"{broker}: {answer}")
        for mq, wrapper in answer.offsets.items():
            label = wanted.get(mq)
            if label is not None:
                committed[label] = wrapper.consumer_offset if wrapper.consumer_offset >= 0 else None
                maxes[label] = wrapper.broker_offset
    return committed, maxes
