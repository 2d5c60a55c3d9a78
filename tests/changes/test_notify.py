"""E-mail: approvers hear of a new request (not its requester), the requester of the decision."""

from __future__ import annotations

from django.core import mail

from consumers.changes import notify, workflow
from consumers.changes.workflow import Actor
from consumers.models import Cluster


def test_approvers_and_then_the_requester_are_told(personas, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    for role in ("operator", "approver", "admin", "viewer"):
        personas[role].email = f"{role}@example.test"
        personas[role].save()
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    request = workflow.submit(
        actor=Actor(personas["operator"]), cluster=cluster, group="orders", kind="reset",
        params={"strategy": "earliest"}, plan={"rows": []}, reason="replay",
    )  # fmt: skip
    notify.new_request(request)
    assert len(mail.outbox) == 1 and sorted(mail.outbox[0].to) == ["admin@example.test", "approver@example.test"]
    assert "approval wanted" in mail.outbox[0].subject and "replay" in mail.outbox[0].body
    rejected = workflow.reject(request, actor=Actor(personas["approver"]), reason="not today")
    notify.decided(rejected)
    assert mail.outbox[1].to == ["operator@example.test"] and "rejected by approver: not today" in mail.outbox[1].body
