"""Polls published through the production path (publish_poll, which announces them) become
alert transitions: fire once, resolve once, hold on unknown, wait for_seconds, silences."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import close_old_connections

from consumers.alerts import evaluate, silences
from consumers.alerts import tasks as alert_tasks
from consumers.alerts.models import Alert, Delivery
from consumers.audit.models import AuditEvent
from consumers.live import snapshots
from consumers.live.publish import publish_failure
from tests.alerts.conftest import make_channel, make_rule
from tests.support.published import group, publish

pytestmark = pytest.mark.django_db


def stopped(name="orders"):
    return group(name, lag=8, online=False)


def healthy(name="orders"):
    return group(name, lag=0, online=True)


def test_a_stopped_group_fires_once_and_resolves_once(east, redis, queued):
    hook, mail = make_channel(), make_channel("ops", kind="email", url="", recipients="ops@example.com")
    make_rule(hook, mail)
    publish(east, redis, [stopped(), healthy("billing")])
    alert = Alert.objects.get()
    assert (alert.state, alert.subject, alert.scope) == ("firing", "orders", "group")
    assert alert.evidence.startswith("STOPPED: no client is online and lag is 8")
    firing = list(Delivery.objects.filter(event="firing").order_by("channel__name"))
    assert [(d.channel.name, d.state) for d in firing] == [("hook", "pending"), ("ops", "pending")]
    assert queued == [d.pk for d in Delivery.objects.order_by("pk")]
    publish(east, redis, [stopped(), healthy("billing")])  # still stopped: nothing new
    assert Alert.objects.count() == 1 and Delivery.objects.count() == 2
    publish(east, redis, [healthy(), healthy("billing")])
    alert.refresh_from_db()
    assert alert.state == "resolved" and alert.end_evidence.startswith("health is OK")
    assert Delivery.objects.filter(event="resolved").count() == 2
    publish(east, redis, [healthy(), healthy("billing")])
    assert Delivery.objects.count() == 4 and len(queued) == 4


def test_a_poll_that_cannot_tell_neither_fires_nor_resolves(east, redis, queued):
    make_rule(make_channel())
    publish(east, redis, [stopped()])
    publish_failure(east, error="ConnectError: refused", polled_at=0, started=0, redis=redis)
    assert Alert.objects.get().state == "firing"
    assert Delivery.objects.count() == 1


def test_a_group_no_longer_listed_resolves_with_why(east, redis, queued):
    make_rule(make_channel())
    publish(east, redis, [stopped(), healthy("billing")])
    publish(east, redis, [healthy("billing")])
    alert = Alert.objects.get()
    assert alert.state == "resolved" and alert.end_evidence == "group orders is no longer listed by the cluster"


def _latest(east, redis):
    meta = snapshots.read_meta(redis, east.pk)
    return meta, snapshots.read_details(redis, east.pk)


def test_for_seconds_waits_and_a_short_blip_is_cleared_without_notice(east, redis, queued):
    make_rule(make_channel(), for_seconds=60)
    docs = publish(east, redis, [stopped()])
    alert = Alert.objects.get()
    assert alert.state == "pending" and not queued
    meta = snapshots.read_meta(redis, east.pk)
    later = alert.started_at + dt.timedelta(seconds=59)
    evaluate.evaluate_cluster(east, meta, docs, None, now=later)
    assert Alert.objects.get().state == "pending"
    outcome = evaluate.evaluate_cluster(east, meta, docs, None, now=later + dt.timedelta(seconds=1))
    assert (outcome.fired, len(outcome.notifications)) == (1, 1) and Alert.objects.get().state == "firing"
    # a second group that stops only briefly never notifies
    publish(east, redis, [stopped(), stopped("blip")])
    publish(east, redis, [stopped(), healthy("blip")])
    blip = Alert.objects.get(subject="blip")
    assert blip.state == "cleared" and not blip.deliveries.exists()


def test_keep_firing_seconds_holds_a_flapping_alert_and_resolves_it_once_clear_long_enough(east, redis, queued):
    make_rule(make_channel(), keep_firing_seconds=300)
    down = publish(east, redis, [stopped()])
    alert = Alert.objects.get()
    t0 = alert.started_at
    assert alert.state == "firing" and len(queued) == 1
    up = publish(east, redis, [healthy()])
    meta = snapshots.read_meta(redis, east.pk)
    alert.refresh_from_db()
    assert (alert.state, alert.clear_since is not None) == ("firing", True)
    flapped_at = t0 + dt.timedelta(seconds=200)
    evaluate.evaluate_cluster(east, meta, down, None, now=flapped_at)  # back before 300 s clear
    alert.refresh_from_db()
    assert (alert.state, alert.clear_since) == ("firing", None) and len(queued) == 1
    clear_from = flapped_at + dt.timedelta(seconds=10)
    evaluate.evaluate_cluster(east, meta, up, None, now=clear_from)
    evaluate.evaluate_cluster(east, meta, up, None, now=clear_from + dt.timedelta(seconds=299))
    assert Alert.objects.get().state == "firing"
    outcome = evaluate.evaluate_cluster(east, meta, up, None, now=clear_from + dt.timedelta(seconds=300))
    alert.refresh_from_db()
    assert (outcome.ended, alert.state, alert.ended_at) == (1, "resolved", clear_from + dt.timedelta(seconds=300))
    assert list(Delivery.objects.values_list("event", flat=True).order_by("pk")) == ["firing", "resolved"]
    assert Alert.objects.count() == 1  # one alert through the flap, not a fire/resolve pair per blip


def test_the_same_poll_evaluated_twice_at_once_notifies_once(east, redis, queued, transactional_db):
    make_rule(make_channel(), make_channel("second"))
    docs = publish(east, redis, [group("other", lag=0)])
    docs = {"orders": publish(east, redis, [stopped()])["orders"]}
    Alert.objects.all().delete(), Delivery.objects.all().delete()
    queued.clear()
    meta = snapshots.read_meta(redis, east.pk)
    barrier, outcomes = threading.Barrier(2), []

    def worker():
        try:
            barrier.wait()
            outcomes.append(alert_tasks.on_poll(None, cluster=east, meta=meta, documents=docs, window=None,
                                                polled_at=meta.polled_at))  # fmt: skip
        finally:
            close_old_connections()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert Alert.objects.count() == 1 and Delivery.objects.count() == 2
    assert sum(len(o.notifications) for o in outcomes) == 2 and len(queued) == 2
    # and a redelivered task (the same poll once more) changes nothing
    evaluate.evaluate_cluster(east, meta, docs, None)
    assert Delivery.objects.count() == 2


def test_a_silence_keeps_the_notification_back_and_is_audited(east, redis, queued, personas):
    rule = make_rule(make_channel())
    silence = silences.create(user=personas["operator"], remote_addr="10.0.0.1", rule=rule, cluster=east,
                              subject_pattern="ord*", minutes=30, reason="deploying orders")  # fmt: skip
    publish(east, redis, [stopped()])
    alert = Alert.objects.get()
    assert alert.state == "firing" and alert.silenced_by == silence and not queued
    event = AuditEvent.objects.get(action="silence-created")
    assert (event.username, event.details["reason"], event.details["subjects"]) == (
        "operator",
        "deploying orders",
        "ord*",
    )
    # ended early (audited too): the still-firing alert is notified at the next poll
    silences.end(silence.pk, user=personas["operator"], remote_addr="10.0.0.1")
    assert AuditEvent.objects.filter(action="silence-ended").count() == 1
    publish(east, redis, [stopped()])
    alert.refresh_from_db()
    assert alert.silenced_by is None and len(queued) == 1


def test_rules_apply_to_their_clusters_only(east, redis, queued):
    from consumers.models import Cluster

    west = Cluster.objects.create(name="west", namesrv_addrs="127.0.0.1:9877")
    rule = make_rule(make_channel())
    rule.clusters.set([west])
    publish(east, redis, [stopped()])
    assert not Alert.objects.exists()
    publish(west, redis, [stopped()])
    assert Alert.objects.get().cluster == west


def test_a_rule_disabled_or_narrowed_away_ends_its_open_alerts(east, redis, queued):
    rule = make_rule(make_channel())
    publish(east, redis, [stopped(), stopped("billing")])
    assert Alert.objects.filter(state="firing").count() == 2
    rule.group_pattern = "billing"
    rule.save()
    publish(east, redis, [stopped(), stopped("billing")])  # orders is no longer the rule's
    orders = Alert.objects.get(subject="orders")
    assert (
        orders.state == "resolved"
        and orders.end_evidence == "group orders no longer matches the rule's groups (billing)"
    )
    rule.enabled = False
    rule.save()
    publish(east, redis, [stopped(), stopped("billing")])
    billing = Alert.objects.get(subject="billing")
    assert billing.state == "resolved"
    assert billing.end_evidence == "the rule was disabled or no longer applies to this cluster"
    assert Delivery.objects.filter(event="resolved").count() == 2  # the channel heard both end


def test_the_alerts_of_a_cluster_no_longer_polled_end(east, redis, queued):
    make_rule(make_channel())
    publish(east, redis, [stopped()])
    east.enabled = False
    east.save()
    evaluate.end_unpolled()
    alert = Alert.objects.get()
    assert alert.state == "resolved" and alert.end_evidence == "the cluster is no longer polled (disabled)"
    assert Delivery.objects.filter(event="resolved").count() == 1


def test_a_channel_taken_off_the_rule_still_hears_the_end(east, redis, queued):
    hook = make_channel()
    rule = make_rule(hook)
    publish(east, redis, [stopped()])
    rule.channels.clear()
    publish(east, redis, [healthy()])
    assert Delivery.objects.filter(channel=hook, event="resolved").count() == 1


def test_a_rule_with_alerts_is_disabled_not_deleted(east, redis, queued):
    from django.db.models import ProtectedError

    rule = make_rule(make_channel())
    publish(east, redis, [stopped()])
    with pytest.raises(ProtectedError):
        rule.delete()


def test_a_group_abandoned_for_the_days_fires_naming_its_teams_and_resolves_when_a_client_is_back(east, redis, queued):
    import time

    from consumers.alerts import channels
    from consumers.identity import Grant

    Grant.objects.create(subject_kind="idp_group", subject="payments", role="viewer", groups="orders*")
    hook = make_channel()
    make_rule(hook, name="abandoned", condition="abandoned", states=(), threshold=7)
    publish(east, redis, [stopped(), stopped("fresh"), healthy("billing")])
    assert Alert.objects.count() == 0  # the console began watching now: nobody idle for 7 days yet
    now = time.time()
    # as the polls would have left it: orders last online 10 days ago, fresh 2 days ago
    redis.hset(snapshots.key(east.pk, "last-online"), mapping={"orders": now - 10 * 86400, "fresh": now - 2 * 86400})
    redis.set(snapshots.key(east.pk, "watching-since"), now - 30 * 86400)
    publish(east, redis, [stopped(), stopped("fresh"), healthy("billing")])
    alert = Alert.objects.get()
    assert (alert.state, alert.subject) == ("firing", "orders")
    assert alert.evidence.startswith("no client online for 10.0 days (threshold 7 days)")
    body = channels.message(Delivery.objects.get(alert=alert))
    assert body["alert"]["teams"] == ["payments"]
    assert channels._alertmanager_entry(body)["labels"]["teams"] == "payments"
    publish(east, redis, [healthy(), stopped("fresh"), healthy("billing")])
    alert.refresh_from_db()
    assert alert.state == "resolved" and alert.end_evidence == "a client of the group is online again"


def test_a_rule_that_captures_stacks_queues_a_capture_as_its_alert_fires(east, redis, queued, monkeypatch):
    captures: list[int] = []
    monkeypatch.setattr("consumers.alerts.tasks.capture_stacks.delay", captures.append)
    make_rule(make_channel(), states=("STOPPED", "STALLED"), capture_stacks=True)
    make_rule(make_channel("other"), name="plain")  # the same state, no capture
    publish(east, redis, [stopped(), healthy("billing")])
    assert captures == [Alert.objects.get(rule__name="stopped").pk]
    publish(east, redis, [stopped(), healthy("billing")])  # still firing: no second capture
    assert len(captures) == 1


@pytest.mark.parametrize(
    ("fields", "allowed"),
    [
        ({"condition": "state", "states": ["STALLED"]}, True),
        ({"condition": "state", "states": ["OK", "FALLING_BEHIND"]}, True),
        ({"condition": "state", "states": ["STOPPED"]}, False),  # no client to ask
        ({"condition": "lag_seconds", "threshold": 60}, False),
    ],
)
def test_only_a_rule_on_stalled_or_falling_behind_may_capture_stacks(fields, allowed):
    from django.core.exceptions import ValidationError

    from consumers.alerts.models import AlertRule

    rule = AlertRule(name="r", capture_stacks=True, **fields)
    if allowed:
        rule.full_clean()
    else:
        with pytest.raises(ValidationError, match="captures stacks"):
            rule.full_clean()
