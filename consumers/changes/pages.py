"""A change request made from a feature's page: the one way every such form ends."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _

from ..rocketmq import RocketMQError
from .guards import ChangeRefused
from .models import ChangeRequest


def submit_from(form: forms.Form, make: Callable[[], ChangeRequest], page_again: Callable[[int], HttpResponse]):
    """The request's page once `make` made it; otherwise the form again (`page_again(status)`)
    with why: the refusal's own status, or 502 when a broker could not be read."""
    try:
        change = make()
    except ChangeRefused as exc:
        form.add_error(None, str(exc))
        return page_again(exc.status)
    except RocketMQError as exc:
        form.add_error(None, _("the broker could not be read: %(error)s") % {"error": exc})
        return page_again(502)
    return redirect("consumers:change-detail", change.pk)
