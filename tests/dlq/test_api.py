"""/api/dlq/.../messages/ with the broker replaced by a DLQ in memory: `total` counts what the
filter selects (the DLQ's size is `dlq_total`), and a parameter that is not a filter is a 400.
The real broker is in test_dlq.py."""

from __future__ import annotations

import asyncio

import pytest

from consumers.dlq import browse, selectors
from consumers.dlq.browse import DlqQueue
from consumers.dlq.models import RedriveJob
from consumers.models import Cluster
from consumers.rocketmq.message import Message

SIZE = 300  # one queue, offsets 0..299; every third one came back after job 7
URL = "/api/dlq/east/orders/messages/"


def dead(offset: int) -> Message:
    properties = {"UNIQ_KEY": f"U{offset}", "RETRY_TOPIC": "T", "KEYS": f"k-{offset % 10}"}
    if offset % 3 == 0:
        properties["REDRIVE_JOB"] = "7"
    return Message(topic="%DLQ%orders", queue_id=0, queue_offset=offset, physical_offset=1000 + offset, sys_flag=0,
                   flag=0, born_timestamp=0, born_host="127.0.0.1:1", store_timestamp=offset,
                   store_host="127.0.0.1:2", reconsume_times=16, prepared_transaction_offset=0, body_crc=0,
                   stored_body=b"", body=b"x", properties=properties)  # fmt: skip


@pytest.fixture
def dlq(db, monkeypatch):
    """The cluster `east` whose group `orders` has SIZE dead letters; `read` lists the ranges read."""
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    queue = DlqQueue("broker-a", 0, 0, SIZE, True)
    read: list[tuple[int, int]] = []

    async def queues(client, group, *, unreadable=None):
        return [queue]

    async def read_range(client, group, q, begin, end):
        read.append((begin, end))
        return [dead(offset) for offset in range(begin, end)]

    monkeypatch.setattr(browse, "dlq_queues", queues)
    monkeypatch.setattr(selectors, "dlq_queues", queues)
    monkeypatch.setattr(browse, "read_range", read_range)
    monkeypatch.setattr(selectors, "run_on_cluster", lambda cluster, work, **_: asyncio.run(work(None)))
    return cluster, read


def test_total_counts_the_filter_not_the_whole_dlq(dlq, viewer_client):
    everything = viewer_client.get(URL).json()
    assert (everything["total"], everything["dlq_total"], len(everything["messages"])) == (SIZE, SIZE, 50)
    came_back = viewer_client.get(URL + "?job=7").json()
    assert came_back["total"] == SIZE // 3 and came_back["dlq_total"] == SIZE
    assert came_back["total_at_least"] == SIZE // 3 and came_back["total_unread"] == 0
    keyed = viewer_client.get(URL + "?key=k-3").json()  # one page holds them all: counted from it
    assert keyed["total"] == len(keyed["messages"]) == SIZE // 10 and keyed["next_cursor"] is None
    assert viewer_client.get(URL + "?job=8").json()["total"] == 0
    # a later page counts the same
    later = viewer_client.get(URL + f"?job=7&cursor={came_back['next_cursor']}").json()
    assert later["total"] == SIZE // 3 and {m["came_back_after_job"] for m in later["messages"]} == {7}


def test_a_job_filter_counts_only_what_came_after_the_job(dlq, viewer_client, personas):
    cluster, read = dlq
    RedriveJob.objects.create(pk=7, cluster=cluster, group="orders", target="group", rate=1, state="done",
                              created_by=personas["operator"], bounds={"broker-a#0": 240})  # fmt: skip
    read.clear()
    found = viewer_client.get(URL + "?job=7").json()
    # its copies can only have come back after the job was planned: offsets 240.. are counted
    assert found["total"] == len(range(240, SIZE, 3))
    assert read[-1] == (240, SIZE)  # the count (after the page) read nothing older


def test_a_count_that_would_read_too_much_is_a_lower_bound(dlq, viewer_client, monkeypatch):
    monkeypatch.setattr(selectors, "COUNT_SCAN_LIMIT", 30)
    found = viewer_client.get(URL + "?job=7").json()
    assert found["total"] is None and found["total_at_least"] == 10 and found["total_unread"] == SIZE - 30


@pytest.mark.parametrize("query", ["?jobs=7", "?job=7&sort=desc", "?page=2"])
def test_an_unknown_parameter_is_a_400_that_lists_the_valid_ones(dlq, viewer_client, query):
    refused = viewer_client.get(URL + query)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert "unknown parameter(s)" in error and "valid parameters: since, until, key" in error


def test_a_viewer_empty_body_parameter_is_known_and_a_body_filter_is_refused(dlq, viewer_client):
    assert viewer_client.get(URL + "?body=").status_code == 200
    assert viewer_client.get(URL + "?body=x").status_code == 403


@pytest.mark.parametrize(
    ("query", "says"),
    [("?since=0001-01-01T00:00", "since: must be on or after 2000-01-01 (UTC)"),
     ("?until=9999-12-31T00:00", "until: 9999-12-31 00:00:00 UTC is in the future"),
     ("?job=%D9%A3", "job: write a whole number in digits 0-9"),  # Arabic-Indic 3
     ("?job=%EF%BC%93", "job: write a whole number in digits 0-9")],  # fullwidth 3
)  # fmt: skip
def test_times_before_2000_or_ahead_and_other_digits_are_a_400_that_reads_nothing(dlq, viewer_client, query, says):
    _cluster, read = dlq
    refused = viewer_client.get(URL + query)
    assert refused.status_code == 400 and says in refused.json()["error"]
    page = viewer_client.get("/dlq/east/orders/" + query)  # the page: the same form, the same refusal
    assert page.status_code == 400 and says.split(": ", 1)[1] in page.content.decode()
    assert read == []
