"""ACL signing against a real 5.3 broker with ACL 2.0 authentication on, and what the
console shows when ACL refuses."""

from __future__ import annotations

import time

import pytest

from consumers.live import snapshots
from consumers.live.poll import poll_cluster
from consumers.models import Cluster
from consumers.rocketmq import AdminClient, BrokerSystemError, Credentials, NoPermission
from tests.conftest import SESSION_DIR, run
from tests.support.scenarios import PREPARED_MESSAGES, prepared_cluster

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
    local = prepared_cluster(
        rmq_runtime,
        SESSION_DIR / "acl",
        topic="T-acl",
        group="G-acl",
        broker_names=("broker-a",),
        broker_config=AUTHENTICATION,
        credentials=Credentials(USER, PASSWORD),
    )
    yield local
    local.discard()


def test_only_correctly_signed_requests_are_answered(secured):
    address = secured.brokers["broker-a"].address

    async def attempt(credentials):
        async with AdminClient(secured.namesrv_addr, credentials=credentials) as client:
            return await client.topology.broker_runtime_info(address)

    with pytest.raises(NoPermission, match="username cannot be null"):
        run(attempt(None))
    with pytest.raises(NoPermission, match="check signature failed"):
        run(attempt(Credentials(USER, "not-the-password")))
    # a 5.3 broker can answer SYSTEM_ERROR (NoSuchElementException) to runtime info for a moment
    # after it boots: that is not an ACL answer, so ask again
    for _ in range(20):
        try:
            answer = run(attempt(Credentials(USER, PASSWORD)))
            break
        except BrokerSystemError:
            time.sleep(0.5)
    assert answer.version == "V5_3_3"


def test_the_console_polls_with_the_clusters_keys_and_shows_when_acl_refuses(
    secured, db, redis, history_dir, viewer_client
):
    cluster = Cluster.objects.create(
        name="secured", namesrv_addrs=secured.namesrv_addr, access_key=USER, secret_key=PASSWORD
    )
    assert poll_cluster(cluster).status == "ok"
    before = snapshots.read_detail(redis, cluster.pk, "G-acl").to_wire()
    assert before["queues"] and before["lag"] == PREPARED_MESSAGES - 2  # offset 1 on each of 2 queues
    cluster.secret_key = "rotated-but-not-here"
    cluster.save()
    assert poll_cluster(cluster).status == "degraded"
    doc = snapshots.read_detail(redis, cluster.pk, "G-acl").to_wire()
    assert doc["stale"] and "check signature failed" in doc["stale_reason"]
    assert doc["lag"] == before["lag"] and doc["as_of"] == before["as_of"]  # the last known data stays
    html = viewer_client.get("/groups/secured/G-acl/").content.decode()
    assert "check signature failed" in html
