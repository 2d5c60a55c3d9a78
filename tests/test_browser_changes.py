"""Click through the changes in headless Chromium against the real cluster: a reset requested
and approved, a DLQ redrive watched, a skip and a pause approved, and the other main actions
with DEBUG on."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from consumers.live.poll import poll_cluster
from devstack.mqadmin import parse_consumer_progress
from tests.conftest import in_thread, new_context
from tests.test_browser import log_in, still_the_page, submit, watch_errors

# transactional: the live server runs in another thread; serialized rollback keeps the role
# groups the migration created across tests
pytestmark = [
    pytest.mark.browser,
    pytest.mark.broker,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_an_operator_requests_a_reset_and_an_approver_approves_it(
    browser, page, live_server, polled, personas, mqadmin, namesrv, traffic, names, create_topic, monkeypatch
):
    from consumers.changes import tasks
    from consumers.changes.models import ChangeRequest
    from tests.support.scenarios import offline_group

    topic, group = create_topic(names.topic("ui")), names.group("ui")
    sent = traffic.produce(topic, 16).sent
    offline_group(mqadmin, namesrv, group, {(topic, m.broker, m.queue_id): 0 for m in sent})
    queued = []
    monkeypatch.setattr(tasks.execute_change, "delay", queued.append)  # the test plays the worker

    log_in(page, live_server.url, "operator", f"/groups/local/{group}/reset/")
    page.select_option("#id_strategy", "latest")
    page.wait_for_selector("#plan tr.plan-row")
    assert page.locator("#plan tr.plan-row").count() == 8 and "16 skipped" in page.locator("#plan tfoot").inner_text()
    page.fill("#id_reason", "skip the backlog left by the load test")
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=str(Path(os.environ["SCREENSHOT_DIR"]) / "reset-preview.png"), full_page=True)
    page.click("#request-reset")
    page.wait_for_selector("#change-state")
    assert page.locator("#change-state").inner_text() == "pending"
    assert page.locator("#approve").count() == 0  # not for the requester
    pk = ChangeRequest.objects.get(group=group).pk

    approver = new_context(browser).new_page()
    log_in(approver, live_server.url, "approver", "/changes/")
    assert approver.locator("#pending-badge").inner_text() == "1"
    approver.click(f"tr[data-change='{pk}'] a")
    submit(approver, "#approve")
    assert approver.locator("#change-state").inner_text() in ("approved", "running", "done")
    assert queued == [pk]
    in_thread(tasks.execute_change.run, pk)  # what the Celery worker does with the queued task
    for _ in range(50):  # the status refreshes itself (htmx) until it is final
        if approver.locator("#change-state").inner_text() == "done":
            break
        approver.wait_for_timeout(200)
    assert approver.locator("#change-state").inner_text() == "done"
    shown = {
        row.get_attribute("data-label"): int(row.get_attribute("data-committed"))
        for row in approver.locator("#verification tr[data-label]").all()
    }
    theirs = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out)
    assert shown == {f"{r.topic}@{r.broker}#{r.queue_id}": r.consumer_offset for r in theirs.rows if r.topic == topic}
    assert approver.evaluate("window.__csp || []") == [] and page.evaluate("window.__csp || []") == []
    approver.context.close()


def test_an_operator_browses_a_dlq_and_watches_a_redrive(
    browser, page, live_server, polled, personas, mqadmin, namesrv, names, monkeypatch
):
    from consumers.dlq import tasks
    from consumers.dlq.models import RedriveJob
    from tests.dlq.test_dlq import fill_dlq

    group = names.group("ui-dlq")
    fill_dlq(mqadmin, namesrv, group, 40)
    queued = []
    monkeypatch.setattr(tasks.run_redrive, "delay", queued.append)  # the test plays the worker

    log_in(page, live_server.url, "operator", f"/dlq/local/{group}/")
    assert page.locator("#dlq-total").inner_text() == "40" and page.locator("tr.dead").count() == 40
    page.fill("#dlq-filters input[name=key]", "k-7")
    submit(page, "#dlq-filters button[type=submit]")
    assert page.locator("tr.dead").count() == 1
    page.goto(f"{live_server.url}/dlq/local/{group}/")
    page.select_option("#id_target", "topic")
    page.fill("#id_target_topic", f"%DLQ%{group}")
    page.fill("#id_rate", "20")
    page.click("#start-redrive")
    page.wait_for_selector("#job-state")
    job = RedriveJob.objects.get(group=group)
    assert queued == [job.pk] and page.locator("#job-total").inner_text() == "40"
    page.click("#pause")  # the job's own controls, before a worker took it
    page.wait_for_selector("#resume")
    assert page.locator("#job-state").inner_text() == "paused"
    page.click("#resume")
    page.wait_for_selector("#pause")
    assert page.locator("#job-state").inner_text() == "queued" and queued == [job.pk, job.pk]
    worker = threading.Thread(target=in_thread, args=(redrive_run, job.pk))
    worker.start()
    seen = set()
    for _ in range(100):  # the page refreshes itself (htmx) while the job runs
        # the state first: a refresh landing between the two reads then shows its count too
        done = page.locator("#job-state").inner_text() == "done"
        seen.add(int(page.locator("#job-moved").inner_text()))
        if done:
            break
        page.wait_for_timeout(200)
    worker.join()
    assert page.locator("#job-state").inner_text() == "done" and page.locator("#job-moved").inner_text() == "40"
    assert len(seen) >= 2  # the page showed the count moving, not only the end
    # sent into the DLQ itself, each copy is a dead letter that "came back": counted after the page loads
    page.wait_for_selector("#came-back-count:not(:has-text('counting'))")
    assert page.locator("#came-back-count").inner_text() == "40 came back"
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=str(Path(os.environ["SCREENSHOT_DIR"]) / "redrive-job.png"), full_page=True)
    assert page.evaluate("window.__csp || []") == []


def redrive_run(pk: int):
    from consumers.dlq.runner import run_job

    return run_job(pk)


def test_the_other_main_actions_with_debug_on(
    browser, page, live_server, polled, personas, settled, monkeypatch, settings
):
    """Every main action not clicked above, through its own button, DEBUG on: a token created
    (shown once) and revoked, a statistics run queued, a reset request refreshed by its
    requester and rejected by an approver. Each lands on a page of the console, never an error."""
    import datetime as dt

    from consumers.changes.guards import Actor
    from consumers.changes.models import ChangeRequest
    from consumers.resets.services import request_reset

    settings.DEBUG = True
    from consumers.stats import views as stats_views
    from consumers.stats.models import StatsRun

    queued = []
    monkeypatch.setattr(stats_views.run_statistics, "delay", queued.append)  # the test plays the worker
    errors = watch_errors(page)
    log_in(page, live_server.url, "operator", "/account/tokens/")

    page.fill("#id_name", "nightly lag export")
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("#new-token")
    secret = page.locator("#new-token code").inner_text()
    assert len(secret) > 20 and page.locator("td", has_text="nightly lag export").count() == 1
    page.click("form[action*='/revoke/'] button")
    page.wait_for_selector("td:text('revoked')")
    assert page.locator("#new-token").count() == 0  # shown once only

    page.goto(live_server.url + "/stats/")
    yesterday = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)).isoformat()
    page.fill("#id_first", yesterday)
    page.fill("#id_last", yesterday)
    page.click("form[action$='/stats/run/'] button[type=submit], form[action*='stats'] button:text('Run')")
    page.wait_for_url("**/stats/jobs/")
    run = StatsRun.objects.get()
    assert queued == [run.pk] and page.locator(f"#runs tr[data-run='{run.pk}']").count() == 1

    params = {"strategy": "latest"}
    request = in_thread(
        lambda: request_reset(
            actor=Actor(personas["operator"]),
            cluster=polled,
            group=settled.lagging.group,
            params=params,
            reason="skip the pile",
        )
    )
    page.goto(f"{live_server.url}/changes/{request.pk}/")
    submit(page, "#refresh")
    assert page.locator("#change-state").inner_text() == "pending"
    assert request.events.filter(action="refresh-preview").count() == 1

    approver = new_context(browser).new_page()
    approver_errors = watch_errors(approver)
    log_in(approver, live_server.url, "approver", f"/changes/{request.pk}/")
    approver.fill("input[name=reason][placeholder^='why reject']", "not during the sale")
    approver.click("#reject")
    approver.wait_for_selector("#change-state:text('rejected')")
    assert ChangeRequest.objects.get(pk=request.pk).state == "rejected"
    approver.evaluate("window.__sameDocument = 42")
    still_the_page(approver)
    page.evaluate("window.__sameDocument = 42")
    still_the_page(page)
    assert errors == [] and approver_errors == []
    assert page.evaluate("window.__csp || []") == [] and approver.evaluate("window.__csp || []") == []
    approver.context.close()


def test_an_operator_skips_a_message_then_pauses_the_group_and_an_approver_approves_each(
    browser, page, live_server, polled, personas, mqadmin, namesrv, traffic, names, create_topic, monkeypatch, settings
):  # fmt: skip
    from consumers.changes import tasks
    from consumers.changes.models import ChangeRequest
    from tests.support.scenarios import offline_group

    settings.RESET_VERIFY_SECONDS = 2  # nobody is online to set the offset back
    topic, group = create_topic(names.topic("uiskip"), queues=1), names.group("uiskip")
    sent = traffic.produce(topic, 8).sent
    poison = next(m for m in sent if m.queue_offset == 1)
    offline_group(
        mqadmin, namesrv, group, {(topic, b, 0): 1 if b == poison.broker else 0 for b in ("broker-a", "broker-b")}
    )
    queued = []
    monkeypatch.setattr(tasks.execute_change, "delay", queued.append)  # the test plays the worker
    approver = new_context(browser).new_page()
    log_in(approver, live_server.url, "approver", "/changes/")

    def approve_and_run(kind: str) -> None:
        pk = ChangeRequest.objects.get(group=group, kind=kind).pk
        approver.goto(f"{live_server.url}/changes/{pk}/")
        submit(approver, "#approve")
        in_thread(tasks.execute_change.run, queued.pop())  # what the Celery worker does with the task
        for _ in range(100):  # the status refreshes itself (htmx) until it is final
            if approver.locator("#change-state").inner_text() == "done":
                break
            approver.wait_for_timeout(200)
        assert approver.locator("#change-state").inner_text() == "done"

    # the skip: the message with its body (an operator's), a reason, four eyes, a copy in the DLQ
    log_in(page, live_server.url, "operator", f"/groups/local/{group}/skip/{topic}/{poison.broker}/0/1/")
    assert page.locator("#msg-id").inner_text() == poison.msg_id and page.locator("#body-hidden").count() == 0
    page.fill("#id_reason", "poison: order 4711")
    page.click("#request-skip")
    page.wait_for_selector("#change-state")
    assert page.locator("#change-state").inner_text() == "pending"
    approve_and_run("skip")
    assert approver.locator("#copied").count() == 1
    progress = parse_consumer_progress(mqadmin.run("consumerProgress", "-g", group).out)
    assert {(r.broker, r.consumer_offset) for r in progress.rows if r.topic == topic} == {
        (poison.broker, 2),
        ("broker-b" if poison.broker == "broker-a" else "broker-a", 0),
    }

    # the pause: each broker's config side by side, the pause form, four eyes, then the banner
    page.goto(f"{live_server.url}/groups/local/{group}/config/")
    assert page.locator("#config-table thead th").count() == 4  # field, broker-a, broker-b, flag
    assert page.locator("tr[data-field=consumeEnable] td[data-broker]").all_inner_texts() == ["true", "true"]
    page.select_option("#id_pause-action", "pause")
    page.fill("#id_pause-reason", "poison flood upstream")
    page.click("#request-pause")
    page.wait_for_selector("#change-state")
    approve_and_run("config")
    in_thread(poll_cluster, polled)
    page.goto(f"{live_server.url}/groups/local/{group}/")
    assert "broker-a, broker-b" in page.locator("#paused-banner").inner_text()
    assert approver.evaluate("window.__csp || []") == [] and page.evaluate("window.__csp || []") == []
    approver.context.close()
