"""E-mail about change requests (Django's mail settings; the console backend by default):
approvers hear of a new request, the requester of the decision and the result.

Each recipient reads it in their language (language_for_address: the saved language of the
user with that address, else the site default), one message per language."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db.models import Q
from django.utils import translation
from django.utils.formats import date_format
from django.utils.translation import gettext

from ..identity import APPROVE
from ..languages.preferences import by_language
from .models import ChangeRequest

log = logging.getLogger(__name__)


def _send(compose: Callable[[], tuple[str, str]], recipients: list[str]) -> None:
    """compose() -> (subject, body), called in each recipient language."""
    for language, addresses in by_language(recipients).items():
        with translation.override(language):
            subject, body = compose()
            console = gettext("RocketMQ console")
        subject = f"[{console}] {subject}"
        try:
            send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, addresses)
        except OSError as exc:  # mail trouble never blocks a change
            log.warning("could not send %r: %s", subject, exc)


def _name(request: ChangeRequest) -> str:
    """The request in one line (its __str__, in the active language)."""
    values = {"pk": request.pk, "kind": request.get_kind_display(), "group": request.group,
              "cluster": request.cluster, "state": request.state}  # fmt: skip
    return gettext("#%(pk)s %(kind)s of %(group)s on %(cluster)s: %(state)s") % values


def new_request(request: ChangeRequest) -> None:
    approvers = (
        get_user_model()
        .objects.filter(Q(groups__permissions__codename=APPROVE) | Q(is_superuser=True), is_active=True)
        .exclude(pk=request.requested_by_id)
        .exclude(email="")
        .values_list("email", flat=True)
        .distinct()
    )

    def compose():
        asks = {"by": request.requested_by, "kind": request.get_kind_display(), "group": request.group,
                "cluster": request.cluster}  # fmt: skip
        body = [
            gettext("%(by)s asks: %(kind)s of %(group)s on %(cluster)s.") % asks,
            gettext("Reason: %(reason)s") % {"reason": request.reason},
            gettext("Expires: %(at)s UTC") % {"at": date_format(request.expires_at, "SHORT_DATETIME_FORMAT")},
        ]
        return gettext("approval wanted: %(request)s") % {"request": _name(request)}, "\n".join(body) + "\n"

    _send(compose, sorted(approvers))


def decided(request: ChangeRequest) -> None:
    email = request.requested_by.email

    def compose():
        values = {"pk": request.pk, "state": request.state, "by": request.decided_by,
                  "reason": request.decision_reason}  # fmt: skip
        if request.decided_by and request.decision_reason:
            body = gettext("Request #%(pk)s is %(state)s by %(by)s: %(reason)s.") % values
        elif request.decided_by:
            body = gettext("Request #%(pk)s is %(state)s by %(by)s.") % values
        elif request.decision_reason:
            body = gettext("Request #%(pk)s is %(state)s: %(reason)s.") % values
        else:
            body = gettext("Request #%(pk)s is %(state)s.") % values
        return _name(request), body + "\n"

    _send(compose, [email] if email else [])


def replanned(request: ChangeRequest, *, by, before: dict | None, after: dict | None) -> None:
    """Someone else refreshed the preview of this request: the requester hears what it now does."""
    email = request.requested_by.email
    if by == request.requested_by or not email:
        return

    def compose():
        body = [
            gettext("%(by)s refreshed the preview of request #%(pk)s; it is approved as it now reads.")
            % {"by": by, "pk": request.pk},
            gettext("Before: %(before)s") % {"before": before},
            gettext("Now: %(after)s") % {"after": after},
        ]
        return gettext("preview refreshed: %(request)s") % {"request": _name(request)}, "\n".join(body) + "\n"

    _send(compose, [email])
