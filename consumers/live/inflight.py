"""POP messages in flight, from the brokers' own metrics.

A POP group's committed offset is the popped position: it moves when messages are handed out,
before any ack, so max - committed counts only what nobody has taken. Messages taken and not
yet acked (in flight) are in no admin response; a 5.x broker counts them itself and exports
them only as metrics (`metricsExporterType=PROM`): `rocketmq_consumer_inflight_messages`, per
consumer group and topic, `is_retry` apart, each broker for its own queues.

Where a cluster has metrics URLs set, each poll reads them (one HTTP GET per broker, under the
broker deadline) and sums each group's in-flight messages; a broker whose metrics could not be
read leaves the number unknown, never a smaller sum.
"""

from __future__ import annotations

import asyncio
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

METRIC = "rocketmq_consumer_inflight_messages"
MAX_BYTES = 64 * 1024 * 1024


def metrics_urls(setting: str, masters: dict[str, str]) -> dict[str, str]:
    """{broker: url} from a cluster's setting: `name=url` entries separated by ';', and `*=url`
    for every other broker, where {host} is the broker's host (from the name server)."""
    entries = dict(part.strip().split("=", 1) for part in setting.replace("\n", ";").split(";") if "=" in part)
    found = {}
    for name, address in masters.items():
        url = entries.get(name) or entries.get("*")
        if url:
            found[name] = url.strip().replace("{host}", address.rpartition(":")[0])
    return found


def parse(text: str) -> dict[str, int]:
    """{consumer group: messages in flight} from one broker's metrics page."""
    found: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        if family.name != METRIC:
            continue
        for sample in family.samples:
            group = sample.labels.get("consumer_group")
            if group:
                found[group] = found.get(group, 0) + int(sample.value)
    return found


def _get(url: str, timeout: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.read(MAX_BYTES).decode("utf-8", "replace")


async def read(urls: dict[str, str], *, timeout: float) -> tuple[dict[str, int], dict[str, str]]:
    """({group: in flight summed over the brokers read}, {broker: why it could not be read})."""

    async def one(url: str):
        try:
            return parse(await asyncio.wait_for(asyncio.to_thread(_get, url, timeout), timeout + 1))
        except (OSError, ValueError, TimeoutError) as exc:
            return exc

    answers = await asyncio.gather(*(one(url) for url in urls.values()))
    totals: dict[str, int] = {}
    errors: dict[str, str] = {}
    for broker, answer in zip(urls, answers, strict=True):
        if isinstance(answer, Exception):
            errors[broker] = f"{type(answer).__name__}: {answer}"
            continue
        for group, count in answer.items():
            totals[group] = totals.get(group, 0) + count
    return totals, errors
