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

Languages: an e-mail reaches each recipient in their language (language_for_address: the
saved language of the user with that address, else the site default), one message per
language (_email). Slack's text and Alertmanager's annotations have no reader we know: the
site default (LANGUAGE_CODE). The webhook's JSON is data, in English whatever the language (its
field names and the evidence as the API gives it).
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
from django.core.mail import EmailMessage, get_connection
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext, gettext_noop

from ..identity import teams_covering
from ..languages.evidence import translate_evidence
from ..languages.preferences import by_language, site_language
from ..live.health import SEVERITY
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
        # the teams whose grants name the group: receivers route on them (Alertmanager: the teams label)
        "teams": teams_covering(alert.cluster.name, alert.subject) if alert.scope == "group" else [],
    }


# Without CONSOLE_BASE_URL the console cannot know the address its users open (a guess such as
# http://127.0.0.1:8000 sent every receiver to its own machine): the message has no link, its
# page's path instead, and says why. `manage.py check` warns in production (consumers/web/checks.py).
NO_BASE_URL = gettext_noop("no link: CONSOLE_BASE_URL is not configured")  # translated by where()


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
    if a["url"]:
        return a["url"]
    return gettext("%(path)s in the console (%(why)s)") % {"path": a["path"], "why": gettext(NO_BASE_URL)}


def send(delivery: Delivery) -> str:
    """Send it; returns what the receiver answered (for the log), raises SendError."""
    channel = delivery.channel
    body = message(delivery)
    if channel.kind == Channel.Kind.EMAIL:
        return _email(channel, body, delivery.attempts)
    sender = {
        Channel.Kind.WEBHOOK: _webhook,
        Channel.Kind.SLACK: _slack,
        Channel.Kind.ALERTMANAGER: _alertmanager,
    }[channel.kind]
    with site_language():  # whatever a task before left active in this worker
        return sender(channel, body)


def headline(body: dict) -> str:
    """One line (mail subjects and chat lines break on a newline), in the active language."""
    a = body["alert"]
    what = f"{a['cluster']} {a['subject']}".strip()
    if body["event"] == "resolved":
        values = {"rule": a["rule"], "what": what, "why": evidence_text(a["resolved_because"])}
        line = gettext("[resolved] %(rule)s: %(what)s: %(why)s") % values
    else:
        line = f"[{a['severity']}] {a['rule']}: {what}: {evidence_text(a['evidence'])}"
    return " ".join(line.split())


def evidence_text(text: str | None) -> str:
    """An alert's evidence (English, as stored and in the webhook's JSON) in the active language
    where it is made of health findings ("STOPPED: <finding>; ..."), whose sentences the
    console knows (languages/evidence.py); anything else as it is."""
    parts = []
    for part in (text or "").split("; "):
        state, colon, rest = part.partition(": ")
        if colon and state in SEVERITY:
            parts.append(f"{state}: {translate_evidence(rest)}")
        else:
            parts.append(translate_evidence(part))
    return "; ".join(parts)


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
    open_text = _mrkdwn(gettext("open in the console"))
    link_line = f"<{a['url']}|{open_text}>" if a["url"] else _mrkdwn(where(a))
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
    if a.get("teams"):
        labels["teams"] = ",".join(a["teams"])  # route with a matcher such as teams=~"(.*,)?payments(,.*)?"
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


@site_language()
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


# an e-mail attempt that reached some of its languages and not all says whom it reached, first
# in its result (the delivery's log): the next attempt sends only to the others (_email)
ACCEPTED = "accepted by "


def _email(channel: Channel, body: dict, attempts: list) -> str:
    """One message per language of the recipients (by_language), each in its language.

    A delivery is one row, sent or not (delivery.py), but its languages are separate SMTP
    messages: a server may take one and refuse the next. So all are written before any is sent
    (a bug sends none), go through one connection opened first (a server that is down gets
    none), and an attempt that got some through says whom, at the start of its result (the
    only record an attempt keeps); the retry sends to the others only, so no address gets an
    alert twice (what the network cannot promise aside: see delivery.py)."""
    done = _accepted(attempts)
    messages = []
    for language, recipients in by_language(a for a in channel.recipient_list() if a not in done).items():
        with translation.override(language):
            subject, text = _email_text(body)
        messages.append(EmailMessage(subject, text, settings.DEFAULT_FROM_EMAIL, recipients))
    accepted = []
    try:
        with get_connection(fail_silently=False) as connection:
            for mail in messages:
                connection.send_messages([mail])
                accepted += mail.to
    except (smtplib.SMTPException, OSError) as exc:
        failure = f"{type(exc).__name__}: {exc}"
        raise SendError(f"{ACCEPTED}{', '.join(accepted)}; {failure}" if accepted else failure) from exc
    return f"mailed to {len(accepted)} address(es)" + (f", {len(done)} before" if done else "")


def _email_text(body: dict) -> tuple[str, str]:
    a = body["alert"]
    lines = [
        headline(body),
        "",
        gettext("Rule: %(rule)s (%(severity)s)") % {"rule": a["rule"], "severity": a["severity"]},
        gettext("Cluster: %(cluster)s") % {"cluster": a["cluster"]},
    ]
    if a["subject"]:
        subject_line = gettext("Broker: %(name)s") if a["scope"] == "broker" else gettext("Group: %(name)s")
        lines.append(subject_line % {"name": a["subject"]})
    lines += [
        gettext("Evidence: %(evidence)s") % {"evidence": evidence_text(a["evidence"])},
        gettext("Since: %(at)s") % {"at": a["fired_at"]},
        gettext("Open: %(where)s") % {"where": where(a)},
    ]
    console = gettext("RocketMQ console")
    return f"[{console}] {headline(body)}"[:200], "\n".join(lines)


def _accepted(attempts: list) -> set[str]:
    """The addresses earlier attempts got the message to (ACCEPTED); a result cut short at its
    end (delivery.py keeps 300 characters) loses its last, partial address: sent again."""
    done = set()
    for attempt in attempts:
        result = attempt.get("result", "")
        if not attempt.get("ok") and result.startswith(ACCEPTED):
            listed, complete, _ = result[len(ACCEPTED) :].partition("; ")
            addresses = listed.split(", ")
            done.update(addresses if complete else addresses[:-1])
    return done


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
