"""The Python half of "every text a reader sees is marked for translation": the strings the
modules of consumers/ and dashboard/ hand to a reader (form labels and errors, flash messages,
refusals a page shows, the texts of the pages' findings) are marked, identifiers aside
(tests/support/unmarked.py says where it looks and what it allows). The templates' half is
tests/test_i18n.py."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from tests.support.unmarked import is_identifier, unmarked_in, unmarked_under

BASE = Path(settings.BASE_DIR)


def test_every_string_the_python_hands_to_a_reader_is_marked_for_translation():
    found = unmarked_under(BASE / "consumers", BASE / "dashboard", base=BASE)
    assert [str(u) for u in found] == []


SAMPLE = """
from django import forms
from django.contrib import messages as flash
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext as _, gettext_lazy, ngettext

LABELS = {"done": "all done", "dlq": gettext_lazy("in the DLQ")}


class Kind(models.TextChoices):
    A = "a", "first kind"
    B = "b", gettext_lazy("second kind")
    C = "c"  # a state name, shown as it is


class SampleForm(forms.Form):
    name = forms.CharField(label="Name", help_text=gettext_lazy("fine"))
    mode = forms.ChoiceField(choices=[("fast", "quickly"), ("slow", gettext_lazy("slowly"))])


class TokenForm(forms.Form):  # a form whose labels a page shows
    name = forms.CharField(help_text=gettext_lazy("what it is for"))


def clean(value, request, n):
    if not value:
        raise ValidationError(f"no value for {request.path}")
    if n:
        flash.error(request, ngettext("%(n)s thing", "%(n)s things", n) % {"n": n})
    side = "past" if n else _("before")
    why = _("it is %(side)s") % {"side": side}
    flash.success(request, why)
    flash.info(request, "OK")  # a state name
    flash.info(request, "lag_seconds")  # a field name
    return LABELS
"""


def test_the_python_check_finds_unmarked_text():
    """The check itself: a table's label, a choice's label, a form's label (and a label Django
    would make from a field's name), an f-string in an error, a word put into a marked sentence
    are found; marked text and identifiers are not."""
    found = [(u.line, u.text) for u in unmarked_in(SAMPLE, "sample.py")]
    assert found == [
        (8, "all done"),
        (12, "first kind"),
        (18, "Name"),
        (19, "quickly"),
        (23, "name: a field without a label"),
        (28, "no value for {}"),
        (31, "past"),
    ]


def test_the_allow_list_holds_identifiers_and_no_sentences():
    for identifier in ["OK", "STALLED", "%DLQ%", "lag_seconds", "consumeFromWhere", "topic@broker-a#0", "—", "#{}"]:
        assert is_identifier(identifier), identifier
    for text in ["consumed", "not yet", "Rate", "e-mail", "in the DLQ", "{} queued."]:
        assert not is_identifier(text), text


def test_a_marked_refusal_is_english_to_a_script_and_chinese_on_a_page(viewer_client, db):
    """The API's texts are identifiers to scripts: it answers in English whatever the request
    asks for, and the same (marked) refusal on a page is in the reader's language."""
    api = viewer_client.get("/api/groups/", {"sort": "nonsense"}, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert api.status_code == 400 and api["Content-Language"] == "en"
    assert "sort: nonsense is not valid; valid values: lag" in api.json()["error"]
    page = viewer_client.get("/groups/", {"sort": "nonsense"}, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert page.status_code == 400 and page["Content-Language"] == "zh-hans"
    assert "筛选条件无效" in page.content.decode() and "nonsense 无效；有效值：lag" in page.content.decode()
