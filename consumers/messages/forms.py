"""The Find form (page and API alike): what to look for, checked before any broker is asked.
Bad values are a clear 400; the API also refuses parameters it does not know."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from django import forms
from django.utils.translation import gettext_lazy as _

from ..models import Cluster
from ..web.inputs import EARLIEST_MS, AsciiDateTimeField, AsciiIntegerField, decode_cursor, moment_problem, text_problem

# the broker's TopicValidator: these characters, 127 long (255 for %RETRY% and %DLQ% in 5.x)
TOPIC_NAME = re.compile(r"[%|a-zA-Z0-9_-]{1,255}")
# offset ids are 32 or 56 hex characters; client ids (UNIQ_KEY) 32 from the classic clients,
# 34 from the RocketMQ 5 SDKs ("01" + 32)
MESSAGE_ID = re.compile(r"[0-9A-Fa-f]{16,64}")
DATETIME = {"input_formats": ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]}
BY = [("id", _("message id")), ("key", _("key")), ("offset", _("topic, queue and offset")),
      ("time", _("topic and time range"))]  # fmt: skip
MAX_OFFSET = 2**63 - 1


@dataclass(frozen=True)
class Search:
    by: str
    msg_id: str = ""
    topic: str = ""
    key: str = ""
    broker: str = ""
    queue_id: int | None = None
    offset: int | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    cursor: dict | None = None


def _moment_field(label: str) -> forms.DateTimeField:
    return AsciiDateTimeField(required=False, label=label, **DATETIME,
                               widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}))  # fmt: skip


class FindForm(forms.Form):
    cluster = forms.ChoiceField(choices=(), label=_("cluster"))
    by = forms.ChoiceField(choices=BY, initial="id", label=_("find by"))
    msg_id = forms.CharField(required=False, max_length=64, label=_("message id"),
                             help_text=_("the broker's offset id or the client's id (UNIQ_KEY)"))  # fmt: skip
    topic = forms.CharField(required=False, max_length=255, label=_("topic"))
    key = forms.CharField(required=False, max_length=255, label=_("key"), help_text=_("a business key (KEYS)"))
    broker = forms.CharField(required=False, max_length=255, label=_("broker"))
    # text boxes, not number inputs: a browser keeps an offset near 2^63 as a double, not exactly
    queue_id = AsciiIntegerField(required=False, min_value=0, max_value=65535, label=_("queue"), widget=forms.TextInput)
    offset = AsciiIntegerField(required=False, min_value=0, max_value=MAX_OFFSET, label=_("offset"),
                               widget=forms.TextInput)  # fmt: skip
    since = _moment_field(_("from (UTC)"))
    until = _moment_field(_("to (UTC)"))
    cursor = forms.CharField(required=False, widget=forms.HiddenInput, max_length=20000)

    NEEDS = {"id": ("msg_id",), "key": ("topic", "key"), "offset": ("topic", "broker", "queue_id", "offset"),
             "time": ("topic", "since", "until")}  # fmt: skip

    def __init__(self, data=None, *, strict: bool = False, cluster_names: list[str] | None = None):
        """`strict` (the API): a parameter that is not a field is a 400, never ignored.
        `cluster_names`: the clusters offered (those the user sees; default all)."""
        super().__init__(data)
        self.strict = strict
        names = cluster_names
        if names is None:
            names = list(Cluster.objects.order_by("name").values_list("name", flat=True))
        self.fields["cluster"].choices = [(n, n) for n in names]
        if len(names) == 1:
            self.fields["cluster"].initial = names[0]

    def clean(self):
        unknown = sorted(set(self.data) - set(self.fields)) if self.strict else []
        if unknown:
            raise forms.ValidationError(
                _("unknown parameter(s) %(unknown)s; valid parameters: %(valid)s")
                % {"unknown": ", ".join(unknown), "valid": ", ".join(self.fields)}
            )
        data = super().clean()
        for name in ("msg_id", "topic", "key", "broker"):
            value = (data.get(name) or "").strip()
            problem = text_problem(value)
            if problem:
                self.add_error(name, problem)
            data[name] = value
        if self.errors:
            return data
        self._check_shapes(data)
        if self.errors:  # a value of the wrong shape is dropped from the data: not also "missing"
            return data
        missing = [n for n in self.NEEDS.get(data.get("by"), ()) if data.get(n) in (None, "")]
        if missing:
            raise forms.ValidationError(
                _("finding by %(by)s needs %(missing)s") % {"by": data["by"], "missing": ", ".join(missing)}
            )
        if data.get("since") and data.get("until") and data["until"] < data["since"]:
            raise forms.ValidationError(_("'to' is before 'from'"))
        return data

    def _check_shapes(self, data: dict) -> None:
        if data["msg_id"] and not MESSAGE_ID.fullmatch(data["msg_id"]):
            self.add_error("msg_id", _("a message id is 16 to 64 hexadecimal characters"))
        if data["topic"] and not TOPIC_NAME.fullmatch(data["topic"]):
            self.add_error("topic", _("a topic name has only letters, digits and % | _ - (at most 255)"))
        if data["key"] and any(c.isspace() for c in data["key"]):
            self.add_error("key", _("a key has no spaces: a message's KEYS are separated by spaces"))
        if data["broker"] and any(c.isspace() or not c.isprintable() for c in data["broker"]):
            self.add_error("broker", _("a broker name has no spaces or control characters"))
        for name in ("since", "until"):
            moment = _ms(data.get(name))
            problem = moment_problem(moment, now_ms=_now_ms(), past_only=False) if moment is not None else None
            if problem:
                self.add_error(name, problem)

    def clean_cursor(self) -> dict | None:
        raw = self.cleaned_data.get("cursor")
        if not raw:
            return None
        try:
            return decode_cursor(
                raw,
                lambda k, v: (
                    isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_OFFSET
                ),
            )
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def error_text(self) -> str:
        return "; ".join(
            f"{field}: {' '.join(errors)}" if field != "__all__" else " ".join(errors)
            for field, errors in self.errors.items()
        )

    def search(self) -> Search:
        data = self.cleaned_data
        return Search(
            by=data["by"], msg_id=data["msg_id"], topic=data["topic"], key=data["key"], broker=data["broker"],
            queue_id=data["queue_id"], offset=data["offset"], since_ms=_ms(data["since"]),
            until_ms=_ms(data["until"]), cursor=data["cursor"],
        )  # fmt: skip


def _ms(moment: dt.datetime | None) -> int | None:
    if moment is None:
        return None
    return int((moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment).timestamp() * 1000)


def _now_ms() -> int:
    return max(EARLIEST_MS, int(dt.datetime.now(dt.UTC).timestamp() * 1000))


def _position_entry(key, value) -> bool:
    """One queue's place in a time-range page cursor: its name and an offset."""
    return isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_OFFSET
