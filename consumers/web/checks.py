"""System checks (`manage.py check`) for settings whose absence Django cannot see."""

from __future__ import annotations

import urllib.parse

from django.conf import settings
from django.core import checks


@checks.register()
def console_base_url(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Alert links start with CONSOLE_BASE_URL. Unset, notifications carry no link (never a
    guessed address); in production that is a mistake worth a warning, in development it is not."""
    url = settings.CONSOLE_BASE_URL
    if not url:
        if settings.DEBUG:
            return []
        return [
            checks.Warning(
                "CONSOLE_BASE_URL is not set: alert notifications carry no link to the console",
                hint="Set it to the address users open, e.g. https://console.example.com",
                id="consumers.W001",
            )
        ]
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return [
            checks.Warning(
                f"CONSOLE_BASE_URL={url!r} is not an absolute http(s) URL: alert links would not open",
                hint="e.g. https://console.example.com",
                id="consumers.W002",
            )
        ]
    return []
