"""Sending one notification on one channel. Each kind turns the same message (`message()`,
the documented webhook schema) into what its receiver expects; any failure is a SendError
with what the receiver said, for the delivery log.

Webhook: POST of the message as JSON; headers X-Console-Event (firing, resolved),
X-Console-Delivery (the delivery's id: a receiver that saw it already can drop a repeat) and
X-Console-Signature: sha256=<hex HMAC-SHA256 of the body with the channel's secret>.

Alertmanager forgets an alert that is not posted again before its endsAt: a firing alert is
posted with endsAt ALERTMANAGER_HOLD_SECONDS ahead and again every minute
(refresh_alertmanagers), so it stays active while it fires, and expires by itself if the
console stops.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import smtplib
import urllib.error
import urllib.request

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone

from .models import Alert, Channel, Delivery

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10


class SendError(Exception):
    pass


def message(delivery: Delivery) -> dict:
    return {
        "schema": "rocketmq-console.alert/1",
        "delivery": delivery.pk,
        "event": delivery.event,
        "alert": _alert(delivery.alert, delivery.event),
    }


def _alert(alert: Alert, event: str) -> dict:
    return {
        "id": alert.pk,
        "rule": alert.rule.name,
        "condition": alert.rule.condition,
        "severity": alert.rule.severity,
        "cluster": alert.cluster.name,
        "scope": alert.scope,
        "subject": alert.subject,
        "evidence": alert.evidence,
        "findings": alert.findings,
        "started_at": _iso(alert.started_at),
        "fired_at": _iso(alert.fired_at),
        "resolved_at": _iso(alert.ended_at) if event == "resolved" else None,
        "resolved_because": alert.end_evidence if event == "resolved" else None,
        "url": link(alert),
        "path": path(alert),
    }


# Without CONSOLE_BASE_URL the console cannot know the address its users open (a guess such as
# http://127.0.0.1:8000 sent every receiver to its own machine): the message has no link, its
# page's path instead, and says why. `manage.py check` warns in production (consumers/checks.py).
NO_BASE_URL = "no link: CONSOLE_BASE_URL is not configured"


def path(alert: Alert) -> str:
    """The alert's page in the console: its group's, or the Alerts page."""
    if alert.scope == "group":
        return reverse("consumers:group-detail", kwargs={"cluster": alert.cluster.name, "group": alert.subject})
    return reverse("consumers:alerts")


def link(alert: Alert) -> str | None:
    base = (settings.CONSOLE_BASE_URL or "").rstrip("/")
    return base + path(alert) if base else None


def where(a: dict) -> str:
    """The link, or the page's path and why there is no link (for text messages)."""
    return a["url"] or f"{a['path']} in the console ({NO_BASE_URL})"


def send(delivery: Delivery) -> str:
    """Send it; returns what the receiver answered (for the log), raises SendError."""
    channel = delivery.channel
    body = message(delivery)
    sender = {
        Channel.Kind.WEBHOOK: _webhook,
        Channel.Kind.SLACK: _slack,
        Channel.Kind.EMAIL: _email,
        Channel.Kind.ALERTMANAGER: _alertmanager,
    }[channel.kind]
    return sender(channel, body)


def headline(body: dict) -> str:
    """One line (mail subjects and chat lines break on a newline)."""
    a = body["alert"]
    what = f"{a['cluster']} {a['subject']}".strip()
    if body["event"] == "resolved":
        line = f"[resolved] {a['rule']}: {what}: {a['resolved_because']}"
    else:
        line = f"[{a['severity']}] {a['rule']}: {what}: {a['evidence']}"
    return " ".join(line.split())


def _webhook(channel: Channel, body: dict) -> str:
    data = json.dumps(body, sort_keys=True).encode()
    headers = {"X-Console-Event": body["event"], "X-Console-Delivery": str(body["delivery"])}
    if channel.secret:
        digest = hmac.new(channel.secret.encode(), data, hashlib.sha256).hexdigest()
        headers["X-Console-Signature"] = f"sha256={digest}"
    return _post(channel.url, data, headers)


def _slack(channel: Channel, body: dict) -> str:
    # Slack's mrkdwn reads &, < and > as markup: escaped, as its documentation asks
    a = body["alert"]
    link_line = f"<{a['url']}|open in the console>" if a["url"] else _mrkdwn(where(a))
    text = f"{_mrkdwn(headline(body))}\n{link_line}"
    return _post(channel.url, json.dumps({"text": text}).encode(), {})


def _mrkdwn(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _alertmanager(channel: Channel, body: dict) -> str:
    return _post(channel.url.rstrip("/") + "/api/v2/alerts", json.dumps([_alertmanager_entry(body)]).encode(), {})


def _alertmanager_entry(body: dict) -> dict:
    a = body["alert"]
    labels = {"alertname": a["rule"], "cluster": a["cluster"], "severity": a["severity"], "scope": a["scope"],
              "source": "rocketmq-console"}  # fmt: skip
    if a["subject"]:
        labels[a["scope"]] = a["subject"]
    entry = {
        "labels": labels,
        "annotations": {"summary": headline(body), "evidence": a["evidence"]},
        "startsAt": a["fired_at"],
    }
    if a["url"]:  # Alertmanager wants a URL here: no link, no field (the path is an annotation)
        entry["generatorURL"] = a["url"]
    else:
        entry["annotations"]["console_path"] = where(a)
    if body["event"] == "resolved":
        entry["endsAt"] = a["resolved_at"]
    else:
        entry["endsAt"] = _iso(timezone.now() + dt.timedelta(seconds=settings.ALERTMANAGER_HOLD_SECONDS))
    return entry


def refresh_alertmanagers() -> int:
    """Post again every firing, not silenced alert that an Alertmanager channel was told of
    (one request per channel); returns how many channels answered."""
    answered = 0
    for channel in Channel.objects.filter(kind=Channel.Kind.ALERTMANAGER, enabled=True):
        firing = Alert.objects.filter(state=Alert.State.FIRING, silenced_by=None, deliveries__channel=channel,
                                      deliveries__event="firing", deliveries__state=Delivery.State.SENT)  # fmt: skip
        entries = [_alertmanager_entry({"event": "firing", "alert": _alert(a, "firing")})
                   for a in firing.select_related("rule", "cluster")]  # fmt: skip
        if not entries:
            continue
        try:
            _post(channel.url.rstrip("/") + "/api/v2/alerts", json.dumps(entries).encode(), {})
            answered += 1
        except SendError as exc:
            log.warning("could not refresh %d alert(s) in %s: %s", len(entries), channel, exc)
    return answered


def _email(channel: Channel, body: dict) -> str:
    a = body["alert"]
    lines = [headline(body), "", f"Rule: {a['rule']} ({a['severity']})", f"Cluster: {a['cluster']}"]
    if a["subject"]:
        lines.append(f"{a['scope'].capitalize()}: {a['subject']}")
    lines += [f"Evidence: {a['evidence']}", f"Since: {a['fired_at']}", f"Open: {where(a)}"]
    try:
        send_mail(f"[RocketMQ console] {headline(body)}"[:200], "\n".join(lines), settings.DEFAULT_FROM_EMAIL,
                  channel.recipient_list())  # fmt: skip
    except (smtplib.SMTPException, OSError) as exc:
        raise SendError(f"{type(exc).__name__}: {exc}") from exc
    return f"mailed to {len(channel.recipient_list())} address(es)"


def _post(url: str, data: bytes, headers: dict) -> str:
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json", **headers})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        # the status only: the log is on a page every role reads, and a body could echo anything
        raise SendError(f"HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise SendError(f"{type(getattr(exc, 'reason', exc)).__name__}: {getattr(exc, 'reason', exc)}") from exc


def _iso(value) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None
