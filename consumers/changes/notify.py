"""E-mail about change requests (Django's mail settings; the console backend by default):
approvers hear of a new request, the requester of the decision and the result."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db.models import Q

from ..identity import APPROVE
from .models import ChangeRequest

log = logging.getLogger(__name__)


def _send(subject: str, body: str, recipients: list[str]) -> None:
    if not recipients:
        return
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients)
    except OSError as exc:  # mail trouble never blocks a change
        log.warning("could not send %r: %s", subject, exc)


def new_request(request: ChangeRequest) -> None:
    approvers = (
        get_user_model()
        .objects.filter(Q(groups__permissions__codename=APPROVE) | Q(is_superuser=True), is_active=True)
        .exclude(pk=request.requested_by_id)
        .exclude(email="")
        .values_list("email", flat=True)
        .distinct()
    )
    _send(
        f"[RocketMQ console] approval wanted: {request}",
        f"{request.requested_by} asks: {request.get_kind_display()} of {request.group} on {request.cluster}.\n"
        f"Reason: {request.reason}\nExpires: {request.expires_at:%Y-%m-%d %H:%M} UTC\n",
        sorted(approvers),
    )


def decided(request: ChangeRequest) -> None:
    email = request.requested_by.email
    _send(
        f"[RocketMQ console] {request}",
        f"Request #{request.pk} is {request.state}"
        + (f" by {request.decided_by}" if request.decided_by else "")
        + (f": {request.decision_reason}" if request.decision_reason else "")
        + ".\n",
        [email] if email else [],
    )


def replanned(request: ChangeRequest, *, by, before: dict | None, after: dict | None) -> None:
    """Someone else refreshed the preview of this request: the requester hears what it now does."""
    email = request.requested_by.email
    if by == request.requested_by or not email:
        return
    _send(
        f"[RocketMQ console] preview refreshed: {request}",
        f"{by} refreshed the preview of request #{request.pk}; it is approved as it now reads.\n"
        f"Before: {before}\nNow: {after}\n",
        [email],
    )
