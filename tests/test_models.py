"""Clusters: address validation, and ACL secrets that never show."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from consumers.models import Cluster
from tests.support.published import group, publish

SECRET = "s3cr3t-value-that-must-never-show"


@pytest.mark.parametrize("addresses", ["127.0.0.1:9876", "a:1;b:2", " 10.0.0.1:9876 , 10.0.0.2:9876 "])
def test_name_server_lists_are_accepted(db, addresses):
    cluster = Cluster(name="ok", namesrv_addrs=addresses)
    cluster.full_clean()
    assert all(":" in a for a in cluster.namesrv_list)


@pytest.mark.parametrize("addresses", ["", "nohost", "host:", ":9876", "host:99999", "host:port"])
def test_malformed_name_servers_are_refused_with_a_message(db, addresses):
    with pytest.raises(ValidationError) as caught:
        Cluster(name="bad", namesrv_addrs=addresses).full_clean()
    assert "namesrv_addrs" in caught.value.message_dict


def test_credentials_only_with_both_keys_and_the_secret_never_shows(db, redis, client, personas):
    cluster = Cluster.objects.create(name="acl", namesrv_addrs="127.0.0.1:9876", access_key="ak", secret_key=SECRET)
    assert cluster.credentials.access_key == "ak" and cluster.uses_acl
    assert SECRET not in repr(cluster) and SECRET not in repr(cluster.credentials)
    assert Cluster(name="x", namesrv_addrs="a:1", access_key="ak").credentials is None
    publish(cluster, redis, [group("g", lag=1)])
    client.force_login(personas["admin"])
    for path in [
        "/",
        "/clusters/",
        "/groups/",
        "/groups/acl/g/",
        "/api/clusters/",
        f"/admin/consumers/cluster/{cluster.pk}/change/",
    ]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert SECRET not in response.content.decode(), path


def test_saving_the_admin_form_without_a_secret_keeps_the_stored_one(db, client, personas):
    cluster = Cluster.objects.create(name="acl", namesrv_addrs="127.0.0.1:9876", access_key="ak", secret_key=SECRET)
    client.force_login(personas["admin"])
    form = {
        "name": "acl",
        "namesrv_addrs": "127.0.0.1:9876",
        "access_key": "ak",
        "secret_key": "",
        "poll_interval": 15,
        "enabled": "on",
    }
    for inline in ("health_overrides", "known_brokers"):
        form.update({f"{inline}-TOTAL_FORMS": 0, f"{inline}-INITIAL_FORMS": 0})
    response = client.post(f"/admin/consumers/cluster/{cluster.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    cluster.refresh_from_db()
    assert cluster.secret_key == SECRET
