"""The language a user chose in the header, kept across sessions and browsers."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class LanguagePreference(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="language_preference"
    )
    # a code of settings.LANGUAGES (en, zh-hans); checked when saved, not by choices, so that a
    # language added later needs no migration
    language = models.CharField(_("language"), max_length=16)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("language preference")

    def __str__(self) -> str:
        return f"{self.user}: {self.language}"
