"""The four-eyes workflow on the server: roles, a different approver, expiry, stale previews,
read-only clusters, races, and an audit event for every move."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading

import pytest
from django.db import connection
from django.utils import timezone

from consumers.audit.models import AuditEvent
from consumers.changes import workflow
from consumers.changes.models import ChangeRequest, State
from consumers.changes.workflow import Actor, ChangeRefused
from consumers.models import Cluster

PLAN = {"params": {"strategy": "earliest"}, "rows": [], "totals": {}}


@pytest.fixture
def cluster(db):
    return Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")


def submit(personas, cluster, who="operator", **overrides) -> ChangeRequest:
    return workflow.submit(
        actor=Actor(personas[who], "10.0.0.1"),
        cluster=cluster,
        group="orders",
        kind="reset",
        params={"strategy": "earliest"},
        plan=PLAN,
        reason=overrides.pop("reason", "replay after the bug fix"),
        **overrides,
    )


def actions(request) -> list[str]:
    return list(AuditEvent.objects.filter(change_request=request).values_list("action", flat=True))


def test_request_approve_and_every_step_is_audited(personas, cluster):
    request = submit(personas, cluster)
    assert request.state == State.PENDING and actions(request) == ["request"]
    approved = workflow.approve(request, actor=Actor(personas["approver"], "10.0.0.2"))
    assert approved.state == State.APPROVED and approved.decided_by == personas["approver"]
    event = AuditEvent.objects.get(change_request=request, action="approve")
    assert (event.username, event.remote_addr, event.cluster, event.group) == ("approver", "10.0.0.2", "east", "orders")


def test_the_requester_cannot_approve_even_as_admin(personas, cluster):
    who = "admin"  # holds both roles: only the four-eyes rule stops it
    request = submit(personas, cluster, who=who)
    with pytest.raises(ChangeRefused, match="someone other than its requester") as refused:
        workflow.approve(request, actor=Actor(personas[who]))
    assert refused.value.status == 403 and ChangeRequest.objects.get(pk=request.pk).state == State.PENDING


def test_single_person_mode_lets_the_requester_approve(personas, cluster, settings):
    settings.CHANGES_SINGLE_PERSON_MODE = True
    request = submit(personas, cluster, who="admin")
    assert workflow.approve(request, actor=Actor(personas["admin"])).state == State.APPROVED


@pytest.mark.parametrize("who", ["viewer", "approver", "nobody"])
def test_only_operators_request(personas, cluster, who):
    with pytest.raises(ChangeRefused, match="operator role") as refused:
        submit(personas, cluster, who=who)
    assert refused.value.status == 403 and not ChangeRequest.objects.exists()


def test_operators_and_viewers_cannot_decide(personas, cluster):
    request = submit(personas, cluster)
    for who in ("viewer", "operator"):
        with pytest.raises(ChangeRefused, match="approver role"):
            workflow.approve(request, actor=Actor(personas[who]))


def test_a_read_only_cluster_and_an_empty_reason_are_refused(personas, cluster):
    with pytest.raises(ChangeRefused, match="reason is required"):
        submit(personas, cluster, reason="  ")
    cluster.read_only = True
    cluster.save()
    with pytest.raises(ChangeRefused, match="read-only"):
        submit(personas, cluster)
    assert not ChangeRequest.objects.exists() and not AuditEvent.objects.exists()


def test_an_expired_request_cannot_be_approved(personas, cluster):
    request = submit(personas, cluster)
    ChangeRequest.objects.filter(pk=request.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    request.refresh_from_db()
    with pytest.raises(ChangeRefused, match="expired") as refused:
        workflow.approve(request, actor=Actor(personas["approver"]))
    assert refused.value.status == 409
    assert ChangeRequest.objects.get(pk=request.pk).state == State.EXPIRED
    assert actions(request) == ["request", "expire"]


def test_a_stale_preview_must_be_refreshed_before_approval(personas, cluster, settings):
    settings.CHANGE_PREVIEW_MAX_AGE_SECONDS = 60
    request = submit(personas, cluster)
    ChangeRequest.objects.filter(pk=request.pk).update(planned_at=timezone.now() - dt.timedelta(seconds=61))
    request.refresh_from_db()
    with pytest.raises(ChangeRefused, match="refresh it before approving"):
        workflow.approve(request, actor=Actor(personas["approver"]))
    refreshed = workflow.replan(request, actor=Actor(personas["approver"]), plan=PLAN)
    assert workflow.approve(refreshed, actor=Actor(personas["approver"])).state == State.APPROVED
    assert actions(request) == ["request", "refresh-preview", "approve"]


def test_rejection_needs_a_reason_and_is_final(personas, cluster):
    request = submit(personas, cluster)
    with pytest.raises(ChangeRefused, match="needs a reason"):
        workflow.reject(request, actor=Actor(personas["approver"]), reason="")
    rejected = workflow.reject(request, actor=Actor(personas["approver"]), reason="wrong group")
    assert rejected.state == State.REJECTED and rejected.decision_reason == "wrong group"
    with pytest.raises(ChangeRefused, match="not pending") as refused:
        workflow.approve(rejected, actor=Actor(personas["approver"]))
    assert refused.value.status == 409


def test_approving_a_finished_request_says_it_is_not_pending_before_asking_its_kind(personas, cluster, monkeypatch):
    """Its kind's check of the broker would answer for a plan that already ran (a done skip's
    group is past the offset: "moved by itself"); the state answers first."""
    request = submit(personas, cluster)
    ChangeRequest.objects.filter(pk=request.pk).update(state=State.DONE)
    request.refresh_from_db()
    asked, kind = [], workflow.kinds.of(request)
    changed = dataclasses.replace(kind, effect_changed=lambda r: asked.append(r) or "moved by itself")
    monkeypatch.setattr(workflow.kinds, "of", lambda r: changed)
    with pytest.raises(ChangeRefused, match=f"request #{request.pk} is done, not pending") as refused:
        workflow.approve(request, actor=Actor(personas["approver"]))
    assert refused.value.status == 409 and asked == []


def test_cancel_by_the_requester_until_it_runs(personas, cluster):
    request = submit(personas, cluster)
    for who in ("viewer", "approver"):  # an approver who disagrees rejects, with a reason
        with pytest.raises(ChangeRefused, match="only the requester") as refused:
            workflow.cancel(request, actor=Actor(personas[who]), reason="not needed")
        assert refused.value.status == 403
    assert ChangeRequest.objects.get(pk=request.pk).state == State.PENDING and actions(request) == ["request"]
    cancelled = workflow.cancel(request, actor=Actor(personas["operator"]))
    assert cancelled.state == State.CANCELLED and cancelled.decided_by is None


def test_an_admin_cancels_someone_elses_request_only_with_a_reason_and_it_is_audited(personas, cluster):
    request = submit(personas, cluster)
    with pytest.raises(ChangeRefused, match="needs a reason"):
        workflow.cancel(request, actor=Actor(personas["admin"]), reason="  ")
    assert ChangeRequest.objects.get(pk=request.pk).state == State.PENDING
    cancelled = workflow.cancel(request, actor=Actor(personas["admin"], "10.0.0.9"), reason="author left the team")
    assert cancelled.state == State.CANCELLED and cancelled.decided_by == personas["admin"]
    assert cancelled.decision_reason == "author left the team"
    event = AuditEvent.objects.get(change_request=request, action="cancel")
    assert (event.username, event.remote_addr) == ("admin", "10.0.0.9")
    assert event.details["reason"] == "author left the team" and event.details["requested_by"] == "operator"


@pytest.mark.django_db(transaction=True)
def test_two_approvers_racing_move_it_once(personas, cluster):
    request = submit(personas, cluster)
    from consumers.identity import create_or_update_user

    second = create_or_update_user("approver2", "approver", "a-long-test-password-2")
    outcomes = []

    def decide(user):
        try:
            outcomes.append(workflow.approve(request, actor=Actor(user)).state)
        except ChangeRefused as exc:
            outcomes.append(exc.status)
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(u,)) for u in (personas["approver"], second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(str, outcomes)) == ["409", "approved"]
    assert actions(request).count("approve") == 1
