"""Tests that write day rows fix "today" when their module is collected; a suite that crosses
midnight (CI's did) must keep that day as today, or "tomorrow" is no longer in the future."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone


def keep_today(monkeypatch, today: dt.date) -> None:
    real = timezone.now
    shift = dt.datetime.combine(today, dt.time()) - dt.datetime.combine(real().date(), dt.time())
    if shift:
        monkeypatch.setattr(timezone, "now", lambda: real() + shift)
