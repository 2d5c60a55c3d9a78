"""ACL signing against a real 5.3 broker with ACL 2.0 authentication on, and what the
console shows when ACL refuses."""

from __future__ import annotations

import pytest

from consumers import snapshots
from consumers.devstack.rocketmq import LocalRocketMQ
from consumers.models import Cluster
from consumers.rocketmq import AdminClient, Credentials, NoPermission
from consumers.rocketmq.models import MessageQueue, SubscriptionGroupConfig, TopicConfig
from consumers.services.polling import poll_cluster
from tests.conftest import SESSION_DIR, run

pytestmark = [pytest.mark.broker, pytest.mark.slow]
USER, PASSWORD = "console", "acl-password-1"
PROVIDERS = "org.apache.rocketmq.auth.authentication.provider"
AUTHENTICATION = {
    "authenticationEnabled": "true",
    "authenticationProvider": f"{PROVIDERS}.DefaultAuthenticationProvider",
    "authenticationMetadataProvider": f"{PROVIDERS}.LocalAuthenticationMetadataProvider",
    "initAuthenticationUser": f'{{"username":"{USER}","password":"{PASSWORD}"}}',
    "innerClientAuthenticationCredentials": f'{{"accessKey":"{USER}","secretKey":"{PASSWORD}"}}',
}


@pytest.fixture(scope="module")
def secured(rmq_runtime):
    local = LocalRocketMQ(rmq_runtime, base_dir=SESSION_DIR / "acl", broker_config=AUTHENTICATION)
    local.start()

    async def prepare():
        async with AdminClient(local.namesrv_addr, credentials=Credentials(USER, PASSWORD)) as client:
            masters = list((await client.topology.cluster_info()).masters().values())
            await client.actions.create_or_update_topic(TopicConfig("T-acl", 2, 2), masters)
            await client.actions.create_or_update_subscription_group(SubscriptionGroupConfig("G-acl"), masters)
            await client.actions.send_message("T-acl", b"x")
            await client.actions.update_consumer_offset("G-acl", MessageQueue("T-acl", "broker-a", 0), 0)

    run(prepare())
    yield local
    local.stop()


def test_only_correctly_signed_requests_are_answered(secured):
    address = secured.brokers["broker-a"].address

    async def attempt(credentials):
        async with AdminClient(secured.namesrv_addr, credentials=credentials) as client:
            return await client.topology.broker_runtime_info(address)

    with pytest.raises(NoPermission, match="username cannot be null"):
        run(attempt(None))
    with pytest.raises(NoPermission, match="check signature failed"):
        run(attempt(Credentials(USER, "not-the-password")))
    assert run(attempt(Credentials(USER, PASSWORD))).version == "V5_3_3"


def test_the_console_polls_with_the_clusters_keys_and_shows_when_acl_refuses(
    secured, db, redis, history_dir, viewer_client
):
    cluster = Cluster.objects.create(
        name="secured", namesrv_addrs=secured.namesrv_addr, access_key=USER, secret_key=PASSWORD
    )
    assert poll_cluster(cluster).status == "ok"
    before = snapshots.read_detail(redis, cluster.pk, "G-acl")
    assert before["queues"] and before["lag"] == 1
    cluster.secret_key = "rotated-but-not-here"
    cluster.save()
    assert poll_cluster(cluster).status == "partial"
    doc = snapshots.read_detail(redis, cluster.pk, "G-acl")
    assert doc["stale"] and "check signature failed" in doc["stale_reason"]
    assert doc["lag"] == before["lag"] and doc["as_of"] == before["as_of"]  # the last known data stays
    html = viewer_client.get("/groups/secured/G-acl/").content.decode()
    assert "check signature failed" in html
