"""When a group will drain: per lagging queue, the consume rate and the produce rate fitted over
the health window's samples (least squares over every poll, not two points: two-point
extrapolation gives wildly inflated figures), and the time until the committed offset meets the
growing max offset. The slowest queue decides the group's figure.

- A queue is caught up when its lag is no more than CAUGHT_UP_SECONDS of what its consumers
  take, and not growing: that lag is messages in flight and offsets not yet committed, and the
  queue keeps pace: 0 s (shrinking or not), and a group whose every lagging queue is caught up
  is DRAINED. So is a queue that had no lag a poll or two ago, with a lag within
  CAUGHT_UP_SECONDS of its consumption (its lag comes and goes: too few polls in a row to fit).
- Otherwise a queue whose lag does not shrink is "not at this rate": no figure, however large.
- The band is the fit's own spread: the drain rate plus or minus two standard errors; a band
  whose slow end does not drain at all has no upper bound ("may never drain").
- Counters that go backwards (a reset) start the queue's series again, and when the rate
  changed within the window (consumers were added, production stopped: two lines fit the lag
  far better than one) only the stretch since the change is judged: a forecast about what
  happens next, not an average of what happened.
- Fewer points than the health window asks for is "not enough history", never a figure.

Pure: samples in, a `Drain` out (the poll stores `Drain.to_wire()` in the group's document)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.utils.translation import gettext_noop

from ..languages.evidence import register_formats
from .fitting import Fit, change_point, fit, may_split
from .health import Sample, Thresholds

DRAINED, DRAINING, NOT_DRAINING, UNKNOWN = "DRAINED", "DRAINING", "NOT_DRAINING", "UNKNOWN"
GROWING, STEADY, SHRINKING = "growing", "steady", "shrinking"

# kept in English in the document and the API, shown translated (consumers/languages/evidence.py)
NOT_ENOUGH_HISTORY = gettext_noop("not enough history: %(points)s poll(s) of %(needed)s needed")
LAG_UNKNOWN = gettext_noop("the last poll could not read the lag")
QUEUES_UNJUDGED = gettext_noop("not enough history for %(count)s queue(s) yet")
register_formats(NOT_ENOUGH_HISTORY, LAG_UNKNOWN, QUEUES_UNJUDGED)


@dataclass
class QueueDrain:
    queue: str
    lag: int
    consume_rate: float | None = None  # messages per second
    produce_rate: float | None = None
    seconds: float | None = None  # None: not at this rate, or unknown (reason)
    low: float | None = None
    high: float | None = None  # None while seconds is set: the slow end may never drain
    points: int = 0
    judged_seconds: float = 0.0
    reason: str | None = None
    caught_up: bool = False  # keeping pace at a lag of what is in flight (CAUGHT_UP_SECONDS)

    @property
    def known(self) -> bool:
        return self.reason is None

    @property
    def draining(self) -> bool:
        return self.known and self.seconds is not None

    def to_wire(self) -> dict:
        return {
            "queue": self.queue,
            "lag": self.lag,
            "consume_rate": _round(self.consume_rate, 3),
            "produce_rate": _round(self.produce_rate, 3),
            "seconds": _round(self.seconds, 1),
            "low": _round(self.low, 1),
            "high": _round(self.high, 1),
            "points": self.points,
            "judged_seconds": round(self.judged_seconds, 1),
            "reason": self.reason,
            "caught_up": self.caught_up,
        }


@dataclass
class Drain:
    state: str
    seconds: float | None = None
    low: float | None = None
    high: float | None = None
    trend: str | None = None
    queue: str | None = None  # the queue that decides (the slowest, or the one growing fastest)
    reason: str | None = None
    queues: list[QueueDrain] = field(default_factory=list)
    caught_up: bool = False  # DRAINED with a lag: every lagging queue keeps pace (QueueDrain.caught_up)

    def to_wire(self) -> dict:
        return {
            "state": self.state,
            "seconds": _round(self.seconds, 1),
            "low": _round(self.low, 1),
            "high": _round(self.high, 1),
            "trend": self.trend,
            "queue": self.queue,
            "reason": self.reason,
            "caught_up": self.caught_up,
        }


# A lag this many seconds of consumption or less is in flight, not a backlog: a push consumer
# commits its offsets every 5 s (the Java client's persistConsumerOffsetInterval), a POP or
# simple consumer acks after processing, so a queue that keeps pace shows a committed offset up
# to a few seconds behind. Twice the commit interval, so a poll just before a commit still counts.
CAUGHT_UP_SECONDS = 10.0


# Where "not at this rate" sorts: after every finite figure (a JSON number, for the list's cursors)
NEVER = 1e15


def sort_value(drain: dict | None) -> float | None:
    """A summary's drain as one number to sort by: 0 when drained, the seconds while draining,
    NEVER when not draining; None (sorted last either way) when unknown."""
    state = (drain or {}).get("state")
    if state == DRAINED:
        return 0.0
    if state == DRAINING:
        return drain.get("seconds")
    return NEVER if state == NOT_DRAINING else None


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


# a queue's figures as the document keeps them (GroupDocument.drain_queues), in this order
DRAIN_FIELDS = tuple(QueueDrain("", 0).to_wire())


def forecast(samples: list[Sample], thresholds: Thresholds) -> Drain:
    """The drain forecast at the newest sample, from the samples inside the health window."""
    if not samples:
        return Drain(UNKNOWN, reason=LAG_UNKNOWN)
    latest = samples[-1]
    window = [s for s in samples if latest.t - s.t <= thresholds.window_seconds]
    if latest.lag is None:
        return Drain(UNKNOWN, reason=LAG_UNKNOWN)
    trend = _trend(window, thresholds.min_samples)
    if not latest.queues:
        return Drain(DRAINED, seconds=0.0, low=0.0, high=0.0, trend=trend)
    needed = max(thresholds.min_samples, 3)
    known = [(s.t, s.queues, s.complete) for s in reversed(window) if s.lag is not None]  # newest first
    queues = [_queue(label, known, needed) for label in sorted(latest.queues)]
    growing = [q for q in queues if q.known and q.seconds is None]
    if growing:
        worst = max(growing, key=lambda q: (q.produce_rate or 0) - (q.consume_rate or 0))
        return Drain(NOT_DRAINING, trend=trend, queue=worst.queue, queues=queues)
    unjudged = [q for q in queues if not q.known]
    if unjudged:
        reason = unjudged[0].reason if len(unjudged) == len(queues) else QUEUES_UNJUDGED % {"count": len(unjudged)}
        return Drain(UNKNOWN, trend=trend, reason=reason, queues=queues)
    slowest = max(queues, key=lambda q: q.seconds)
    if slowest.seconds == 0:
        return Drain(DRAINED, 0.0, 0.0, 0.0, trend=trend, queues=queues, caught_up=True)
    high = None if any(q.high is None for q in queues) else max(q.high for q in queues)
    return Drain(
        DRAINING, slowest.seconds, max(q.low for q in queues), high, trend=trend, queue=slowest.queue, queues=queues
    )


def _queue(label: str, known: list[tuple[float, dict, bool]], needed: int) -> QueueDrain:
    """One lagging queue: its series since it last started (lag appeared, or a counter went
    back), fitted. `known`: (t, lagging queues, complete) of each poll that read the group's lag
    (one unknown is neither a point nor a break), newest first."""
    series = []  # (t, committed offset, max offset), newest first until reversed
    newer_offset = newer_top = 0
    moved = False  # either counter differs between two of the series' polls
    emptied = None  # where in `known` the queue last had no lag
    for i, (t, queues, complete) in enumerate(known):
        position = queues.get(label)
        if position is None:
            if not complete:
                continue  # part of the group unread then: perhaps this queue, not a lag of 0
            emptied = i
            break  # no lag then: the series starts after
        offset, lag = position
        top = offset + lag
        if series:
            if offset > newer_offset or top > newer_top:
                break  # a counter went back between this poll and the next: the series starts after
            moved = moved or offset != newer_offset or top != newer_top
        series.append((t, offset, top))
        newer_offset, newer_top = offset, top
    series.reverse()
    idle = None if moved else _idle(series)
    rates, cut = (idle, False) if idle is not None else _one_pass(series)
    if cut:  # the rate may have changed within the series: searched, and fitted again
        series = series[change_point([(t, m - o) for t, o, m in series]) :]
        rates = _rates(series)
    if not series:  # the newest poll did not read this queue (its lag was carried over)
        return QueueDrain(label, 0, reason=NOT_ENOUGH_HISTORY % {"points": 0, "needed": needed})
    offset, top = series[-1][1], series[-1][2]
    found = QueueDrain(label, top - offset, points=len(series))
    if len(series) < needed or rates is None:
        if emptied is None or not _kept_pace(found, series, known[emptied + 1 :]):
            found.reason = NOT_ENOUGH_HISTORY % {"points": len(series), "needed": needed}
        return found
    consume_rate, produce_rate, lag = rates
    found.consume_rate, found.produce_rate = consume_rate, produce_rate
    found.judged_seconds = lag.seconds
    rate = -lag.slope  # messages drained per second, net of what arrives
    if found.lag <= consume_rate * CAUGHT_UP_SECONDS and lag.slope <= 2 * lag.se:
        found.seconds = found.low = found.high = 0.0
        found.caught_up = True
        return found
    if rate <= 0:
        return found  # not at this rate
    found.seconds = found.lag / rate
    found.low = found.lag / (rate + 2 * lag.se)
    slow = rate - 2 * lag.se
    found.high = found.lag / slow if slow > 0 else None
    return found


def _kept_pace(found: QueueDrain, series: list[tuple[float, int, int]], older: list) -> bool:
    """A queue that had no lag a poll or two ago, too few polls since to fit: caught up when its
    lag now is within CAUGHT_UP_SECONDS of what it consumed from its oldest poll in the window
    (`older`: the polls before it emptied, newest first) to now. The committed and max offsets
    are counters, so the polls without lag between do not matter to the rates. Without it a queue
    whose lag comes and goes (a few messages in flight at each poll) is never judged at all."""
    t0, o0, m0 = series[0]
    for t, queues, _ in older:
        position = queues.get(found.queue)
        if position is None:
            continue
        offset, top = position[0], position[0] + position[1]
        if offset > o0 or top > m0:
            break  # a counter went back (a reset): before it is another series
        t0, o0, m0 = t, offset, top
    t1, o1, m1 = series[-1]
    if t1 <= t0 or o1 <= o0 or found.lag > (o1 - o0) / (t1 - t0) * CAUGHT_UP_SECONDS:
        return False
    found.consume_rate, found.produce_rate = (o1 - o0) / (t1 - t0), (m1 - m0) / (t1 - t0)
    found.judged_seconds = t1 - t0
    found.seconds = found.low = found.high = 0.0
    found.caught_up = True
    return True


def _one_pass(series: list[tuple[float, int, int]]) -> tuple[tuple[float, float, Fit] | None, bool]:
    """`_rates(series)`, and whether `change_point` might cut the series (`_split`'s first test),
    from one pass over it: most queues' rates do not change within the window, and the three
    passes (the whole lag's fit, its newest half's, the rates') were half of a forecast's time.
    The same sums, shifted the same way, as those functions make: the same figures."""
    n = len(series)
    if n == 0:
        return None, False
    t0, o0, m0 = series[0]
    h = n // 2
    th, yh = series[h][0], series[h][2] - series[h][1]
    st = stt = so = sto = sm = stm = sy = sty = syy = 0.0
    hst = hsy = hstt = hsty = 0.0
    for k, (t, o, m) in enumerate(series):
        if k >= h:  # the newest half, shifted to its own first point (as fit() shifts it)
            ht, hy = t - th, (m - o) - yh
            hst += ht
            hsy += hy
            hstt += ht * ht
            hsty += ht * hy
        t, o, m = t - t0, o - o0, m - m0
        y = m - o
        st += t
        stt += t * t
        so += o
        sto += t * o
        sm += m
        stm += t * m
        sy += y
        sty += t * y
        syy += y * y
    rates = _fitted(n, st, stt, so, sto, sm, stm, syy, series[-1][0] - t0)
    if rates is None:
        return None, n >= 5
    return rates, n >= 5 and may_split(n, st, sy, stt, sty, syy, n - h, hst, hsy, hstt, hsty)


def _idle(series: list[tuple[float, int, int]]) -> tuple[float, float, Fit] | None:
    """`_one_pass`'s rates for a series where neither counter moved, without its sums: both
    rates 0, the lag's slope 0 on a line (no spread), and no change point to look for. A large
    cluster's lagging queues are often an idle group's (offline or abandoned): for those the
    sums were half the forecast's time (12,500 groups x 8 queues x 15 polls: 0.75 s of CPU
    against 1.45)."""
    if len(series) < 2 or series[-1][0] <= series[0][0]:
        return None  # one poll, or polls all at one time: left to `_one_pass`
    return 0.0, 0.0, Fit(0.0, 0.0, len(series), series[-1][0] - series[0][0])


def _rates(series: list[tuple[float, int, int]]) -> tuple[float, float, Fit] | None:
    """The consume and produce rates (least-squares slopes of the committed and max offsets) and
    the lag's fit, in one pass (the lag's slope is the difference of the two: least squares is
    linear)."""
    n = len(series)
    t0, o0, m0 = series[0]
    st = stt = so = sto = sm = stm = sll = 0.0
    for t, o, m in series:
        t, o, m = t - t0, o - o0, m - m0
        st += t
        stt += t * t
        so += o
        sto += t * o
        sm += m
        stm += t * m
        sll += (m - o) * (m - o)
    return _fitted(n, st, stt, so, sto, sm, stm, sll, series[-1][0] - t0)


def _fitted(n, st, stt, so, sto, sm, stm, sll, seconds) -> tuple[float, float, Fit] | None:
    """The rates and the lag's fit from the sums over the series (each shifted to its first point)."""
    sxx = stt - st * st / n
    if sxx <= 0:
        return None  # polls all at one time: no rate
    consume, produce = (sto - st * so / n) / sxx, (stm - st * sm / n) / sxx
    sl, slope = sm - so, produce - consume
    residuals = max(0.0, sll - sl * sl / n - slope * slope * sxx)
    se = math.sqrt(residuals / (n - 2) / sxx) if n > 2 else 0.0
    return consume, produce, Fit(slope, se, n, seconds)


def _trend(window: list[Sample], min_samples: int) -> str | None:
    """The group's lag over the window: growing or shrinking when the fitted slope is clear of
    its own spread, steady otherwise; None with too few polls to say."""
    points = [(s.t, float(s.lag)) for s in window if s.lag is not None and s.complete]
    lag = fit(points[change_point(points) :]) if len(points) >= max(min_samples, 3) else None
    if lag is None:
        return None
    if lag.slope > 2 * lag.se and lag.slope * lag.seconds >= 1:
        return GROWING
    if lag.slope < -2 * lag.se and -lag.slope * lag.seconds >= 1:
        return SHRINKING
    return STEADY


def after_reset(rows: list[dict], drain_queues: list[dict]) -> dict:
    """The drain forecast if a reset's plan ran now: each queue's lag from its target to its max
    offset, drained at the net rate its consumers showed while they had a backlog (the group's
    latest forecast). A queue with a backlog after the reset but none now has no measured rate
    (its consumers only kept up with production): unknown, and counted as such."""
    rates = {q["queue"]: q for q in drain_queues if None not in (q.get("consume_rate"), q.get("produce_rate"))}
    slowest, seconds, unknown = None, 0.0, 0
    for row in rows:
        if row.get("target") is None or row.get("max") is None:
            continue
        lag = max(0, row["max"] - row["target"])
        if lag == 0:
            continue
        queue = rates.get(row["label"])
        if queue is None:
            unknown += 1
            continue
        rate = queue["consume_rate"] - queue["produce_rate"]
        if rate <= 0:
            return {"state": NOT_DRAINING, "seconds": None, "queue": row["label"], "unknown": unknown}
        if lag / rate > seconds:
            slowest, seconds = row["label"], lag / rate
    if unknown:
        return {"state": UNKNOWN, "seconds": None, "queue": None, "unknown": unknown}
    if slowest is None:
        return {"state": DRAINED, "seconds": 0.0, "queue": None, "unknown": 0}
    return {"state": DRAINING, "seconds": round(seconds, 1), "queue": slowest, "unknown": 0}
