"""Which subjects a rule's condition holds for, on hand-made documents: holds, known not to
hold, or unknown (never taken for "fine")."""

from __future__ import annotations

from consumers.alerts.conditions import Spec, judge
from consumers.live.documents import BrokerState, ClusterMeta, GroupDocument
from consumers.live.health import Sample


def doc(group: str, state: str = "OK", *, evidence: str = "lag 0, consuming", stale=False, **fields) -> GroupDocument:
    health = {"state": state, "findings": [{"state": state, "evidence": evidence}], "covered_seconds": 60}
    return GroupDocument(group=group, as_of=100.0, stale=stale, health=health, **fields)


def meta(status: str = "ok", **fields) -> ClusterMeta:
    return ClusterMeta(cluster_id=1, name="east", polled_at=100.0, duration=0.1, status=status, **fields)


def test_a_state_rule_holds_on_any_finding_of_its_states_and_says_which():
    docs = {
        "stopped": doc("stopped", "STOPPED", evidence="no client is online and lag is 7"),
        "ok": doc("ok"),
        "both": GroupDocument(
            "both",
            100.0,
            health={
                "state": "STALLED",
                "findings": [
                    {"state": "STALLED", "evidence": "queue q0 has not moved for 90 s"},
                    {"state": "STOPPED", "evidence": "no client is online and lag is 3"},
                ],
            },
        ),  # fmt: skip
    }
    verdict = judge(Spec("state", frozenset({"STOPPED"})), meta(), docs)
    assert set(verdict.holds) == {"stopped", "both"}
    assert verdict.holds["stopped"].evidence == "STOPPED: no client is online and lag is 7"
    assert verdict.holds["both"].evidence == "STOPPED: no client is online and lag is 3"
    assert len(verdict.holds["both"].findings) == 2  # the whole health goes with the alert
    assert not verdict.unknown


def test_unknown_and_stale_groups_are_unknown_not_fine():
    docs = {"u": doc("u", "UNKNOWN", evidence="the last poll could not read"), "s": doc("s", "STOPPED", stale=True)}
    verdict = judge(Spec("state", frozenset({"STOPPED"})), meta(), docs)
    assert verdict.holds == {} and verdict.unknown == {"u", "s"}
    # a rule on UNKNOWN itself holds for the unknown group (the stale one stays unknown)
    verdict = judge(Spec("state", frozenset({"UNKNOWN"})), meta(), docs)
    assert set(verdict.holds) == {"u"} and verdict.unknown == {"s"}


def test_the_group_pattern_is_shell_style():
    docs = {name: doc(name, "STOPPED") for name in ("orders-eu", "orders-us", "payments")}
    verdict = judge(Spec("state", frozenset({"STOPPED"}), group_pattern="orders-*"), meta(), docs)
    assert set(verdict.holds) == {"orders-eu", "orders-us"}


def test_lag_seconds_above_the_threshold_and_unknown_when_not_measured():
    docs = {"slow": doc("slow", lag_seconds=301.0, lag=40), "fast": doc("fast", lag_seconds=3.0, lag=2),
            "unmeasured": doc("unmeasured", lag_seconds=None)}  # fmt: skip
    verdict = judge(Spec("lag_seconds", threshold=300), meta(), docs)
    assert set(verdict.holds) == {"slow"} and verdict.unknown == {"unmeasured"}
    assert verdict.holds["slow"].evidence == "lag is 301 s, above 300 s (lag 40 messages)"


def _samples(points):
    return [Sample(t, True, 0, dlq=d) for t, d in points]


def test_dead_letter_rate_counts_arrivals_per_hour_over_the_window():
    # by hand: +10 (0 -> 10), a redrive takes 5 away (not arrivals), +15 (5 -> 20): 25 in 180 s = 500/h
    window = {"g": _samples([(0, 0), (60, 10), (120, 5), (180, 20)]), "short": _samples([(0, 0), (30, 50)]),
              "calm": _samples([(0, 3), (120, 4)])}  # fmt: skip
    docs = {g: doc(g) for g in window}
    verdict = judge(Spec("dlq_rate", threshold=400), meta(), docs, window)
    assert set(verdict.holds) == {"g"}
    assert verdict.holds["g"].evidence == "25 dead letters in the last 180 s: 500 per hour, above 400"
    assert verdict.unknown == {"short"}  # 30 s of polls is too short to tell a rate
    assert not judge(Spec("dlq_rate", threshold=500), meta(), docs, window).holds  # 500 is not above 500


def test_brokers_missing_or_failing_hold_and_unknown_ones_are_unknown():
    brokers = [BrokerState("a", "127.0.0.1:1", state="ok"), BrokerState("b", "127.0.0.1:2", state="missing"),
               BrokerState("c", "127.0.0.1:3", state="failing", error="timeout"),
               BrokerState("d", "127.0.0.1:4", state="unknown")]  # fmt: skip
    verdict = judge(Spec("broker_missing"), meta(brokers=brokers), {})
    assert set(verdict.holds) == {"b", "c"} and verdict.unknown == {"d"}
    assert verdict.holds["c"].evidence == "broker c (127.0.0.1:3) is failing: timeout"


def test_a_failed_poll_tells_nothing_of_groups_but_is_itself_a_degraded_cluster():
    failed = meta("failed", error="ConnectError: name server refused")
    assert judge(Spec("state", frozenset({"STOPPED"})), failed, None).all_unknown
    assert judge(Spec("broker_missing"), failed, None).all_unknown
    verdict = judge(Spec("cluster_degraded"), failed, None)
    assert verdict.holds[""].evidence == "the cluster's last poll is failed: ConnectError: name server refused"
    assert judge(Spec("cluster_degraded"), meta("ok"), {}).holds == {}


def test_evidence_kept_in_english_reads_in_the_recipients_language():
    """Every kind of evidence, not only health findings: notifications in Chinese had English
    sentences for lag, dead-letter rates, brokers and clusters."""
    from django.utils import translation
    from django.utils.translation import gettext

    from consumers.alerts import conditions as c
    from consumers.alerts.channels import evidence_text

    cases = [
        (c.LAG_ABOVE, {"seconds": "90", "threshold": "60", "lag": 12}),
        (c.DLQ_ABOVE, {"arrivals": 7, "span": "120", "rate": "210", "threshold": "100"}),
        (c.BROKER_GONE, {"broker": "broker-b"}),  # not "broker-b is <no longer known>"
        (c.BROKER_AT_ERROR, {"broker": "broker-b", "address": "127.0.0.1:10911", "state": "failing", "error": "x"}),
        (c.BROKER_AT, {"broker": "broker-b", "address": "127.0.0.1:10911", "state": "missing"}),
        (c.NO_LONGER_LISTED, {"group": "orders"}),
    ]
    with translation.override("zh-hans"):
        for fmt, values in cases:
            assert evidence_text(fmt % values) == gettext(fmt) % values != fmt % values, fmt
        nested = evidence_text(c.HEALTH_WITH % {"state": "STOPPED", "finding": "no client is online and lag is 40"})
        assert (
            nested.startswith(gettext("health is %(state)s: %(finding)s").split("%")[0]) and "no client" not in nested
        )
    assert evidence_text(c.LAG_ABOVE % cases[0][1]) == c.LAG_ABOVE % cases[0][1]


def drain(state, seconds=None, queue="T@b#0", reason=None):
    return {"state": state, "seconds": seconds, "low": seconds, "high": seconds, "trend": None, "queue": queue,
            "reason": reason}  # fmt: skip


def test_drain_seconds_holds_above_the_threshold_and_when_not_draining_unknown_without_a_forecast():
    docs = {
        "slow": doc("slow", lag=900, drain=drain("DRAINING", 7300.4)),
        "quick": doc("quick", lag=10, drain=drain("DRAINING", 60.0)),
        "never": doc("never", lag=5000, drain=drain("NOT_DRAINING", queue="T@b#3")),
        "done": doc("done", lag=0, drain=drain("DRAINED", 0.0)),
        "new": doc("new", lag=50, drain=drain("UNKNOWN", reason="not enough history: 2 poll(s) of 3 needed")),
        "unpolled": doc("unpolled", lag=50),
    }
    verdict = judge(Spec("drain_seconds", threshold=7200), meta(), docs)
    assert set(verdict.holds) == {"slow", "never"} and verdict.unknown == {"new", "unpolled"}
    assert verdict.holds["slow"].evidence == "drains in about 7300 s, above 7200 s (slowest: T@b#0)"
    assert verdict.holds["never"].evidence == "lag 5000 does not shrink at the current rates (T@b#3)"
    verdict = judge(Spec("not_draining"), meta(), docs)
    assert set(verdict.holds) == {"never"} and verdict.unknown == {"new", "unpolled"}


def test_why_a_drain_alert_ends():
    from consumers.alerts.conditions import clear_evidence

    docs = {"g": doc("g", lag=0, drain=drain("DRAINED", 0.0)), "h": doc("h", lag=3, drain=drain("DRAINING", 30.0))}
    assert clear_evidence(Spec("not_draining"), "g", meta(), docs) == "the lag is consumed"
    assert (
        clear_evidence(Spec("drain_seconds", threshold=60), "h", meta(), docs)
        == "drains in about 30 s (threshold 60 s)"
    )


def test_an_abandoned_rule_holds_past_its_days_and_is_unknown_where_nothing_says():
    from consumers.alerts.conditions import Idle

    day = 86400.0
    offline = ("old", "never", "recent", "unrecorded")
    docs = {name: doc(name, online=False) for name in offline}
    docs |= {"online": doc("online", online=True), "unsure": doc("unsure", online=None)}
    idle = {"old": Idle(9 * day, True), "never": Idle(30 * day, False), "recent": Idle(2 * day, True)}
    verdict = judge(Spec("abandoned", threshold=7), meta(), docs, idle=idle)
    assert set(verdict.holds) == {"old", "never"} and verdict.unknown == {"unsure", "unrecorded"}
    assert verdict.holds["old"].evidence == "no client online for 9.0 days (threshold 7 days)"
    assert verdict.holds["never"].evidence.startswith("no client seen online in the 30.0 days the console has watched")
