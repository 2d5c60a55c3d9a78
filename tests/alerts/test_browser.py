"""The Alerts page in headless Chromium with DEBUG off (as production and the demo run): an
operator follows the header's firing count, acknowledges the alert, silences a group and ends
the silence."""

from __future__ import annotations

import pytest

from consumers.alerts.models import Silence
from tests.alerts.conftest import make_channel, make_rule
from tests.support.published import group, publish
from tests.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_an_operator_acknowledges_silences_and_ends_the_silence(
    page, live_server, east, redis, queued, settings, personas
):
    make_rule(make_channel(), severity="critical")
    publish(east, redis, [group("orders", lag=8, online=False)])
    log_in(page, live_server.url, "operator", landing="/")
    assert page.locator("#firing-badge").inner_text() == "1"
    page.click("nav >> text=Alerts")
    page.wait_for_selector("#firing .alert-row")
    row = page.locator("#firing .alert-row")
    assert "STOPPED: no client is online and lag is 8" in row.inner_text()
    row.locator("button", has_text="Acknowledge").click()
    page.wait_for_selector("text=acknowledged by operator")

    page.fill("#id_subject_pattern", "orders")
    page.select_option("#id_cluster", "east")
    page.fill("#id_minutes", "30")
    page.fill("#id_reason", "deploying the fix")
    page.click("#silence-form button[type=submit]")
    page.wait_for_selector("text=Silenced until")
    silence = Silence.objects.get()
    assert page.locator(f"#silence-{silence.pk}").inner_text().count("deploying the fix") == 1
    page.locator(f"#silence-{silence.pk} button").click()
    page.wait_for_selector("text=The silence is ended.")
    assert Silence.objects.get().ended_by.username == "operator"
    assert page.evaluate("window.__csp || []") == []
