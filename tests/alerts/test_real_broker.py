"""The issue's scenario on the real broker: a consumer of the Java harness stops, and each
channel hears exactly one STOPPED firing, even with the webhook receiver down at the time and
the same poll announced twice; it starts again, and each hears exactly one resolution."""

from __future__ import annotations

import pytest

from consumers.alerts import delivery, evaluate
from consumers.alerts.models import Alert, Delivery
from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from tests.alerts.conftest import make_channel, make_rule
from tests.support.receivers import HttpReceiver, SmtpReceiver
from tests.support.scenarios import wait

pytestmark = [pytest.mark.broker]


def _health(redis, cluster, group) -> dict:
    poll_cluster(cluster)
    return (snapshots.read_details(redis, cluster.pk).get(group) or {}).health or {}


def _deliver_all(queued: list[int]) -> list[str]:
    return [delivery.deliver(pk) for pk in queued]


def test_a_real_consumer_stopping_and_starting_notifies_once_each_way(
    namesrv, names, create_topic, traffic, redis, history_dir, queued, settings
):
    topic, group = create_topic(names.topic("alert")), names.group("alert")
    cluster = Cluster.objects.create(name="local", namesrv_addrs=namesrv)
    hook, smtp = HttpReceiver(), SmtpReceiver()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
    try:
        make_rule(make_channel(url=hook.url, secret="k"), make_channel("ops", kind="email", url="",
                  recipients="ops@example.com"), group_pattern=group)  # fmt: skip
        consumer = traffic.consume(group, topic)
        traffic.produce(topic, 12)
        consumer.wait_acked(12)
        produced = [12]

        def ok_while_consuming() -> bool:
            # OK needs consumption seen between polls: a group that has consumed everything
            # and gets nothing more is IDLE, so a message goes out before each poll
            traffic.produce(topic, 1)
            produced[0] += 1
            return _health(redis, cluster, group).get("state") == "OK"

        wait(ok_while_consuming, 60, "the group OK")
        consumer.wait_acked(produced[0])
        assert not Alert.objects.exists()

        consumer.stop()
        sent = traffic.produce(topic, 10).sent
        wait(lambda: _health(redis, cluster, group).get("state") == "STOPPED", 60, "the group STOPPED")
        alert = Alert.objects.get()
        # the evidence is the harness's count: the 10 sent after the stop wait for nobody
        assert alert.state == "firing" and alert.evidence.startswith(
            f"STOPPED: no client is online and lag is {len(sent)}"
        )
        hook.stop()  # the webhook's receiver is down when the alert fires
        assert sorted(_deliver_all(queued)) == ["pending", "sent"]
        # the same poll announced again (a redelivered task, a second worker) and one more poll
        meta, docs = snapshots.read_meta(redis, cluster.pk), snapshots.read_details(redis, cluster.pk)
        evaluate.evaluate_cluster(cluster, meta, docs, None)
        poll_cluster(cluster)
        assert Delivery.objects.count() == 2 and len(queued) == 2
        hook.start()
        Delivery.objects.filter(state="pending").update(next_attempt_at=alert.started_at)
        assert [delivery.deliver(pk) for pk in delivery.due().values_list("pk", flat=True)] == ["sent"]
        assert [m["event"] for m in hook.json()] == ["firing"] and len(smtp.messages) == 1

        again = traffic.consume(group, topic)
        again.wait_acked(len(sent))
        wait(ok_while_consuming, 60, "the group OK again")
        alert.refresh_from_db()
        assert alert.state == "resolved"
        assert _deliver_all(queued[2:]) == ["sent", "sent"]
        assert [m["event"] for m in hook.json()] == ["firing", "resolved"]
        assert len(smtp.messages) == 2 and "[resolved] stopped" in smtp.messages[1]["data"]
        assert Delivery.objects.filter(state="sent").count() == 4
    finally:
        hook.stop()
        smtp.stop()
