"""Reading and saving a user's language, and the language to write to someone in."""

from __future__ import annotations

from contextlib import contextmanager

from django.conf import settings
from django.utils import translation

from .models import LanguagePreference

# the user's saved language, copied into the session at login ("" when none is saved), so that a
# page costs no query for it; the switch updates both
SESSION_KEY = "_console_language"


def is_supported(code: str) -> bool:
    return code in {known for known, _ in settings.LANGUAGES}


def saved_language(user) -> str | None:
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    code = LanguagePreference.objects.filter(user=user).values_list("language", flat=True).first()
    return code if code and is_supported(code) else None


def save_language(user, code: str) -> None:
    if not is_supported(code):
        raise ValueError(f"unknown language {code!r}")
    LanguagePreference.objects.update_or_create(user=user, defaults={"language": code})


def language_for_user(user) -> str:
    """The language to write to this user in: theirs if saved, else the site default."""
    return saved_language(user) or settings.LANGUAGE_CODE


def language_for_address(address: str) -> str:
    """The language of a notification sent to this e-mail address: the saved language of the
    users with that address when they agree on one, else the site default (LANGUAGE_CODE)."""
    codes = set(
        LanguagePreference.objects.filter(user__email__iexact=address.strip(), user__is_active=True).values_list(
            "language", flat=True
        )
    )
    if len(codes) == 1 and is_supported(code := codes.pop()):
        return code
    return settings.LANGUAGE_CODE


def by_language(addresses) -> dict[str, list[str]]:
    """The addresses grouped by the language to write to each in (language_for_address): one
    message per language, each recipient reading their own. Ordered by language code, so a
    retry sends the groups in the same order."""
    groups: dict[str, list[str]] = {}
    for address in addresses:
        groups.setdefault(language_for_address(address), []).append(address)
    return dict(sorted(groups.items()))


@contextmanager
def site_language():
    """Text written outside any request (tasks, e-mails to several people) in LANGUAGE_CODE."""
    with translation.override(settings.LANGUAGE_CODE):
        yield


def on_login(sender, request, user, **kwargs) -> None:
    """Receiver of user_logged_in: the user's saved language, for every page of the session."""
    if request is not None and hasattr(request, "session"):
        request.session[SESSION_KEY] = saved_language(user) or ""
