"""E-mail: approvers hear of a new request (not its requester), the requester of the decision."""

from __future__ import annotations

from django.core import mail
from django.utils import translation
from django.utils.translation import gettext

from consumers.changes import notify, workflow
from consumers.changes.workflow import Actor
from consumers.languages.models import LanguagePreference
from consumers.models import Cluster


def test_approvers_and_then_the_requester_are_told(personas, settings):
    request = _requested_reset(personas, settings, ("operator", "approver", "admin", "viewer"))
    notify.new_request(request)
    assert len(mail.outbox) == 1 and sorted(mail.outbox[0].to) == ["admin@example.test", "approver@example.test"]
    assert "approval wanted" in mail.outbox[0].subject and "replay" in mail.outbox[0].body
    rejected = workflow.reject(request, actor=Actor(personas["approver"]), reason="not today")
    notify.decided(rejected)
    assert mail.outbox[1].to == ["operator@example.test"] and "rejected by approver: not today" in mail.outbox[1].body


def test_each_reads_it_in_their_language(personas, settings):
    """The approvers apart by language (one message each); the requester in theirs."""
    for role in ("approver", "operator"):
        LanguagePreference.objects.create(user=personas[role], language="zh-hans")
    request = _requested_reset(personas, settings, ("operator", "approver", "admin"))
    notify.new_request(request)
    english, chinese = sorted(mail.outbox, key=lambda m: m.to)
    assert english.to == ["admin@example.test"] and chinese.to == ["approver@example.test"]
    pending = f"#{request.pk} offset reset of orders on east: pending"
    assert english.subject == f"[RocketMQ console] approval wanted: {pending}"
    with translation.override("zh-hans"):
        kind = str(request.get_kind_display())
        wanted = gettext("approval wanted: %(request)s") % {"request": notify._name(request)}
        asks = gettext("%(by)s asks: %(kind)s of %(group)s on %(cluster)s.")
    assert kind != "offset reset" and kind in chinese.subject and chinese.subject.endswith(wanted)
    assert asks % {"by": "operator", "kind": kind, "group": "orders", "cluster": "east"} in chinese.body
    notify.decided(workflow.reject(request, actor=Actor(personas["approver"]), reason="not today"))
    assert mail.outbox[2].to == ["operator@example.test"] and "not today" in mail.outbox[2].body
    assert "rejected by" not in mail.outbox[2].body  # the operator reads Chinese


def _requested_reset(personas, settings, with_email: tuple[str, ...]):
    """An operator's pending reset of orders on east, e-mails kept in memory; the roles named
    have an address."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    for role in with_email:
        personas[role].email = f"{role}@example.test"
        personas[role].save()
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    return workflow.submit(
        actor=Actor(personas["operator"]), cluster=cluster, group="orders", kind="reset",
        params={"strategy": "earliest"}, plan={"rows": []}, reason="replay",
    )  # fmt: skip
