"""Which brokers a known POP reset defect concerns, worked by hand."""

from __future__ import annotations

from consumers.resets.defects import affecting, parse_version, pop_reset_warnings


def test_versions_are_read_as_the_brokers_report_them():
    assert parse_version("V5_3_3") == (5, 3, 3)
    assert parse_version("5.4.0") == (5, 4, 0)
    assert parse_version("V4_9_8_SNAPSHOT") == (4, 9, 8)
    assert parse_version("") is None and parse_version("HEAD") is None


def test_the_fifo_pop_defect_names_the_affected_brokers_only_for_fifo_groups():
    versions = {"broker-a": "V5_3_3", "broker-b": "V5_4_0"}
    [warning] = pop_reset_warnings(versions, fifo=True)
    assert "apache/rocketmq#10229" in warning and "broker-a (V5_3_3)" in warning and "broker-b" not in warning
    assert pop_reset_warnings(versions, fifo=False) == []
    assert pop_reset_warnings({"broker-b": "V5_4_0"}, fifo=True) == []
    [unknown] = pop_reset_warnings({"broker-c": ""}, fifo=True)
    assert unknown.startswith("Broker version unknown for broker-c")
    assert affecting(versions, fifo=True) == ["apache/rocketmq#10229"] and affecting(versions, fifo=False) == []
    assert affecting({"broker-b": "V5_4_0"}, fifo=True) == [] and affecting({"x": "?"}, fifo=True) != []


def test_warnings_are_kept_in_english_and_shown_in_the_readers_language():
    """A request is read by people of other languages than its author's: the plan keeps its
    warnings in English whatever language the author had, and each reader sees them in theirs."""
    from django.utils import translation
    from django.utils.translation import gettext

    from consumers.languages.evidence import translate_evidence
    from consumers.resets.defects import DEFECTS, KNOWN_DEFECT, UNDO_NOTE

    with translation.override("zh-hans"):
        [warning] = pop_reset_warnings({"broker-a": "V5_3_3"}, fifo=True)
        assert warning.startswith("Known broker defect (apache/rocketmq#10229)")  # made in English
        shown = translate_evidence(warning)
        values = {"issue": "apache/rocketmq#10229", "version": "5.3.3", "defect": gettext(DEFECTS[0].text),
                  "brokers": "broker-a (V5_3_3)"}  # fmt: skip
        assert shown == gettext(KNOWN_DEFECT) % values and shown != warning
        assert translate_evidence(UNDO_NOTE) == gettext(UNDO_NOTE) != UNDO_NOTE
    assert translate_evidence(warning) == warning  # in English, as made
