"""The API tokens page: a user lists, creates and revokes their own tokens. A new token's
secret is shown once, in the answer to the POST that made it (never in a URL or a redirect)."""

from __future__ import annotations

from django import forms
from django.contrib import messages as flash
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ...web.inputs import AsciiIntegerField
from ..access import console_action, console_page, remote_addr
from ..grants import PatternError, patterns
from ..roles import ROLES
from ..scope import EVERY, Rule
from . import services


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, label=gettext_lazy("Name"),
                           help_text=gettext_lazy("what the token is for, e.g. 'nightly lag export'"))  # fmt: skip
    days = AsciiIntegerField(required=False, min_value=1, max_value=3650, initial=90,
                              label=gettext_lazy("expires after (days)"),
                              help_text=gettext_lazy("empty: never expires"))  # fmt: skip
    role = forms.ChoiceField(
        required=False,
        label=gettext_lazy("Role"),
        choices=[("", gettext_lazy("all of mine")), *((role, role) for role in ROLES)],
        help_text=gettext_lazy("a read-only script needs viewer"),
    )
    clusters = forms.CharField(max_length=500, required=False, initial="*", label=gettext_lazy("Clusters"),
                               help_text=gettext_lazy("names or globs; * for all"))  # fmt: skip
    groups = forms.CharField(max_length=1000, required=False, initial="*", label=gettext_lazy("Consumer groups"),
                             help_text=gettext_lazy("consumer group globs"))  # fmt: skip
    topics = forms.CharField(max_length=1000, required=False, initial="*", label=gettext_lazy("Topics"),
                             help_text=gettext_lazy("topic globs (message pages)"))  # fmt: skip

    def clean(self):
        data = super().clean()
        if not data.get("role"):
            data["rule"] = None
            return data
        try:
            data["rule"] = Rule(
                data["role"],
                patterns(data.get("clusters", ""), blank=EVERY),
                patterns(data.get("groups", ""), blank=EVERY),
                patterns(data.get("topics", "")),
            )
        except PatternError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


def _page(request, form, *, secret: str | None = None, status: int = 200):
    context = {"tokens": services.tokens_of(request.user), "form": form, "secret": secret, "nav": "tokens"}
    return render(request, "tokens/list.html", context, status=status)


@console_page
def token_list(request):
    return _page(request, TokenForm())


@console_action
def token_create(request):
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    try:
        _token, secret = services.create(request.user, name=form.cleaned_data["name"], days=form.cleaned_data["days"],
                                    remote_addr=remote_addr(request), rule=form.cleaned_data["rule"])  # fmt: skip
    except services.TokenRefused as exc:
        form.add_error(None, str(exc))
        return _page(request, form, status=403)
    return _page(request, TokenForm(), secret=secret)


@console_action
def token_revoke(request, pk: int):
    token = services.revoke(request.user, pk, remote_addr=remote_addr(request))
    if token is None:
        flash.error(request, _("No such active token of yours."))
    else:
        flash.success(
            request, _("Token %(name)s (%(prefix)s…) is revoked.") % {"name": token.name, "prefix": token.prefix}
        )
    return redirect("consumers:tokens")
