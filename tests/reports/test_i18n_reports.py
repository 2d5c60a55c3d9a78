"""Lag reports in Chinese, read back: the CSV's headers translated and its values as in English,
the XLSX's sheets and headers translated with typed cells, the PDF's headings found by
pdftotext (a CJK font printed them, not boxes); an English report as it always was; the
language of a report and of its e-mails."""

from __future__ import annotations

import csv
import datetime as dt
import io
import subprocess

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import translation
from django.utils.formats import date_format
from django.utils.translation import gettext, pgettext
from openpyxl import load_workbook

from consumers.languages.models import LanguagePreference
from consumers.reports import services
from consumers.reports.content import DETAIL_COLUMNS, SUMMARY_COLUMNS
from consumers.reports.models import Report
from tests.reports.test_reports import D1, D2, D3, TODAY, days, read, same_day, spec  # noqa: F401 (fixtures)

# every test here has the day rows of test_reports (its `days` fixture), made first
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("days")]
# the CSV header of every report before the Chinese interface: an English one still has it
ENGLISH_HEADER = [
    "cluster", "group", "period start (UTC)", "status", "coverage", "consumed", "produced", "retries",
    "DLQ arrivals", "resets", "incidents", "lag p50 (msgs)", "lag p95 (msgs)", "lag max (msgs)", "lag p50 (s)",
    "lag p95 (s)", "lag max (s)", "SLO breach (min)", "SLO (s)", "source",
]  # fmt: skip


def in_chinese(function, *args):
    """What the catalogue makes of it (never the Chinese written out a second time here)."""
    with translation.override("zh-hans"):
        return function(*args)


def reader(name: str, language: str | None, email: str = ""):
    user = get_user_model().objects.create_user(name, email=email)
    if language:
        LanguagePreference.objects.create(user=user, language=language)
    return user


def build(report: Report) -> Report:
    report = services.build_report(report.pk)
    assert report.state == Report.State.READY, report.error
    return report


@pytest.fixture
def chinese_report():
    """All three formats, asked for by a user who chose Chinese."""
    return build(services.request_report(spec(), ["csv", "xlsx", "pdf"], user=reader("li", "zh-hans")))


def test_a_report_is_written_in_its_makers_language(chinese_report):
    assert chinese_report.language == "zh-hans"
    assert chinese_report.title == in_chinese(services.title_of, spec())
    assert chinese_report.title != services.title_of(spec()) and chinese_report.files["csv"].isascii()


def test_the_chinese_csv_has_chinese_headers_and_the_same_machine_readable_values(chinese_report):
    rows = list(csv.reader(io.StringIO(read(chinese_report, "csv").decode("utf-8-sig"))))
    header = in_chinese(lambda: [str(label) for _, label, _ in DETAIL_COLUMNS] + [gettext("source")])
    assert rows[0] == header and header != ENGLISH_HEADER
    orders = [dict(zip(ENGLISH_HEADER, row, strict=True)) for row in rows[1:4]]
    # numbers unformatted, dates ISO 8601: as in the English file (test_reports.test_csv_cells_worked_by_hand)
    assert [(r["period start (UTC)"], r["consumed"], r["lag p95 (s)"]) for r in orders] == [
        (D1.isoformat(), "100", "30.5"), (D2.isoformat(), "", ""), (D3.isoformat(), "300", "90.25"),
    ]  # fmt: skip
    assert [r["status"] for r in orders] == [
        in_chinese(pgettext, "report status", "ok"),
        in_chinese(gettext, "no statistics"),
        in_chinese(lambda: gettext("low coverage (%(coverage)s)") % {"coverage": "50%"}),
    ]
    assert {r["source"] for r in orders} == {in_chinese(gettext, "nightly statistics, daily rows (database)")}


def test_the_chinese_xlsx_has_chinese_sheets_and_headers_and_typed_cells(chinese_report):
    book = load_workbook(io.BytesIO(read(chinese_report, "xlsx")))
    sheets = in_chinese(lambda: [pgettext("report sheet", "About"), gettext("Summary"), gettext("Daily")])
    about, summary, daily = sheets
    assert book.sheetnames == sheets and about != "About"
    assert [c.value for c in book[summary][1]] == in_chinese(lambda: [str(label) for _, label, _ in SUMMARY_COLUMNS])
    assert [c.value for c in book[daily][1]] == in_chinese(lambda: [str(label) for _, label, _ in DETAIL_COLUMNS])
    first = book[daily][2]  # orders on D1
    period, consumed, lag = first[2], first[5], first[15]
    assert period.is_date and period.data_type == "d" and period.value.date() == D1
    assert (consumed.data_type, consumed.value, consumed.number_format) == ("n", 100, "#,##0")
    assert (lag.data_type, lag.value) == ("n", 30.5)
    assert book[summary][2][4].data_type == "n"  # coverage: a fraction, shown as a percentage
    about_rows = {row[0].value: row[1] for row in book[about].iter_rows()}
    first_day = about_rows[in_chinese(gettext, "from")]
    assert first_day.is_date and first_day.value.date() == D1
    assert about_rows[in_chinese(gettext, "time zone")].value == "UTC"


def test_the_chinese_pdf_prints_chinese_headings_dates_and_charts(chinese_report):
    fonts = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True, check=True).stdout
    assert fonts, "no CJK font: chromium prints boxes (apt-get install fonts-wqy-microhei, scripts/setup.sh test)"
    pdf = services.report_dir(chinese_report) / chinese_report.files["pdf"]
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, check=True).stdout.decode()
    headings = in_chinese(lambda: [gettext(h) for h in ("Summary by group", "Charts", "Time zone", "Coverage",
                                                         "Generated", "Source")])  # fmt: skip
    assert [h for h in headings if h not in text] == []
    chart = in_chinese(gettext, "Messages consumed vs produced per day")  # a plotly title, drawn as SVG text
    legend = in_chinese(gettext, "produced")
    assert chart in text and legend in text
    assert in_chinese(date_format, D1, "SHORT_DATE_FORMAT") in text  # the locale's dates (2026年…)
    assert "Summary by group" not in text and "Time zone" not in text
    used = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    assert any(name in used for name in ("WenQuanYi", "Noto", "CJK")), used  # glyphs of a CJK font, not boxes


def test_an_english_report_reads_as_it_always_did():
    report = build(services.request_report(spec(), ["csv", "xlsx"], user=reader("ann", None)))
    assert report.language == "en"
    assert report.title == f"Lag report east, {D1} to {D3} (daily, UTC)"
    rows = list(csv.reader(io.StringIO(read(report, "csv").decode("utf-8-sig"))))
    assert rows[0] == ENGLISH_HEADER and rows[1][3] == "ok"
    book = load_workbook(io.BytesIO(read(report, "xlsx")))
    assert book.sheetnames == ["About", "Summary", "Daily"] and book["Summary"]["C1"].value == "periods with statistics"


def test_the_page_makes_the_report_in_the_language_it_is_read_in(client, personas, monkeypatch):
    """No saved language: the browser's, as the page is shown in (a saved one wins: the middleware)."""
    monkeypatch.setattr("consumers.reports.views.build_report.delay", lambda pk: None)
    client.force_login(personas["viewer"])
    form = {"clusters": ["east"], "first": D1, "last": D3, "granularity": "daily", "formats": ["csv"]}
    assert client.post("/reports/new/", form, HTTP_ACCEPT_LANGUAGE="zh-CN").status_code == 302
    assert client.post("/reports/new/", form, HTTP_ACCEPT_LANGUAGE="en").status_code == 302
    assert list(Report.objects.order_by("pk").values_list("language", flat=True)) == ["zh-hans", "en"]


def test_scheduled_reports_take_their_recipients_language_and_each_reads_the_mail_in_theirs(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    reader("li", "zh-hans", "li@example.com")
    reader("zhao", "zh-hans", "zhao@example.com")
    settings.REPORT_EMAIL_TO = ["li@example.com", "zhao@example.com"]
    assert services.scheduled_language() == "zh-hans"  # they agree
    settings.REPORT_EMAIL_TO = ["li@example.com", "leads@example.com"]  # leads@: nobody's, the site default
    assert services.scheduled_language() == settings.LANGUAGE_CODE == "en"

    [report] = services.weekly_reports(enqueue=lambda pk: None, today=TODAY)
    report = build(report)
    assert report.language == "en" and report.title.startswith("Lag report east")
    english, chinese = sorted(mail.outbox, key=lambda m: m.to)
    assert english.to == ["leads@example.com"] and chinese.to == ["li@example.com"]  # one message each, once
    assert english.subject == report.title and "Attached: PDF and XLSX." in english.body
    assert chinese.subject == in_chinese(services.title_of, services.spec_of(report))
    files = in_chinese(lambda: gettext("The attached files are in %(language)s.")
                       % {"language": translation.get_language_info("en")["name_translated"]})  # fmt: skip
    assert files in chinese.body and "Attached: PDF and XLSX." not in chinese.body
    assert (
        [name for name, _, _ in english.attachments]
        == [name for name, _, _ in chinese.attachments]
        == [
            report.files["pdf"],
            report.files["xlsx"],
        ]
    )


def test_a_report_made_before_languages_is_built_in_the_site_default(settings):
    settings.LANGUAGE_CODE = "zh-hans"
    report = services.request_report(spec(), ["csv"], language="en")
    Report.objects.filter(pk=report.pk).update(language="")
    rows = list(csv.reader(io.StringIO(read(build(report), "csv").decode())))
    assert rows[0][2] == in_chinese(gettext, "period start (UTC)")
    assert dt.date.fromisoformat(rows[1][2]) == D1
