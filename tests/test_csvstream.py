"""Downloads: no cell of any CSV or XLSX we write can run as a formula (numbers stay numbers),
every attachment's Content-Disposition survives CR/LF, quotes and any script, and what a
signed-in user downloads or sees is never cached (Cache-Control: no-store)."""

from __future__ import annotations

import base64
import csv
import datetime as dt
import email.message
import email.utils
import io
import urllib.parse
from decimal import Decimal

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.test import RequestFactory
from openpyxl import load_workbook

from consumers import audit
from consumers.audit.models import AuditEvent
from consumers.dlq.views import CSV_COLUMNS, csv_row
from consumers.models import Cluster
from consumers.stats.models import GroupDay
from consumers.web.csvstream import attachment, base64_cell, csv_writer, safe_cell
from consumers.web.middleware import NoStoreMiddleware
from tests.reports.test_reports import BASE, D1, D2, built, days, read  # noqa: F401 (days: a fixture)

HYPERLINK = '=HYPERLINK("http://x","y")'
NO_STORE = "no-store, private"


# --- the neutraliser -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (HYPERLINK, "'" + HYPERLINK),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("-5", "'-5"),  # the text "-5", not the number: OWASP's rule quotes it
        ("@SUM(1)", "'@SUM(1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
    ],
)
def test_text_starting_with_a_formula_trigger_gets_a_quote(text, expected):
    assert safe_cell(text) == expected


@pytest.mark.parametrize("text", ["orders", "", "a=b", "1-2", " =1", "'=1", "%DLQ%g", "{}", "日本"])
def test_other_text_is_untouched(text):
    assert safe_cell(text) == text


@pytest.mark.parametrize(
    "value", [-5, 0, -0.25, Decimal("-1.5"), True, None, dt.datetime(2024, 1, 2, 3, 4), dt.date(2024, 1, 2)]
)
def test_numbers_dates_and_none_are_untouched(value):
    assert safe_cell(value) is value


def test_the_streamed_csv_writer_neutralises_every_text_cell_and_keeps_numbers():
    class Text:  # anything else is written as its str(): that text is checked too
        def __str__(self):
            return "=1+1"

    line = csv_writer().writerow(["=cmd", "-1", -1, -0.5, Decimal("-2"), None, "ok", Text()])
    assert line == "'=cmd,'-1,-1,-0.5,-2,,ok,'=1+1\r\n"


def test_the_file_csv_writer_neutralises_too():
    handle = io.StringIO()
    csv_writer(handle).writerow(["@SUM(1)", 7])
    assert handle.getvalue() == "'@SUM(1),7\r\n"


def test_a_dlq_export_record_as_a_csv_row():
    record = {
        "broker": "broker-a", "queue_id": 0, "offset": 17, "msg_id": "AC11000100002A9F", "original_msg_id": "=orig",
        "original_topic": "-T", "tags": "@tag", "keys": ["=k1", "k2"], "store_ms": 1700000000000,
        "reconsume_times": 16, "body_size": 3, "properties": {"KEYS": "=k1 k2"}, "body_base64": "+/8A",
        "topic": "%DLQ%g", "born_ms": 1699999999000, "born_host": "10.0.0.1:5", "store_host": "10.0.0.2:10911",
        "offset_msg_id": "0A", "compression": None,
    }  # fmt: skip
    assert len(CSV_COLUMNS) == 13
    cells = next(csv.reader([csv_writer().writerow(csv_row(record))]))
    assert cells == ["broker-a", "0", "17", "AC11000100002A9F", "'=orig", "'-T", "'@tag", "'=k1 k2", "1700000000000",
                     "16", "3", '{"KEYS": "=k1 k2"}', "+/8A"]  # fmt: skip


def test_a_body_whose_base64_starts_with_plus_reads_back_exactly_from_the_csv():
    body = bytes([0xFB, 0xFF, 0x00, 0x2A])  # 111110...: base64 "+/8AKg=="
    record = {c: "" for c in CSV_COLUMNS} | {"keys": [], "properties": {}}
    record["body_base64"] = base64.b64encode(body).decode()
    cells = next(csv.reader([csv_writer().writerow(csv_row(record))]))
    assert cells[CSV_COLUMNS.index("body_base64")] == "+/8AKg=="
    assert base64.b64decode(cells[CSV_COLUMNS.index("body_base64")], validate=True) == body


@pytest.mark.parametrize("text", ["+/8A", "+A1/B2==", "-A1", "", "QUJD"])
def test_checked_base64_is_exempt_from_the_guard_in_csv_and_xlsx(text):
    if text.startswith("-"):  # not base64 ("-" is the URL-safe alphabet's): refused, the guard stays
        with pytest.raises(ValueError, match="not standard base64"):
            base64_cell(text)
        return
    assert safe_cell(base64_cell(text)) == text
    assert csv_writer().writerow([base64_cell(text)]) == (f"{text}\r\n" if text else '""\r\n')


@pytest.mark.parametrize(
    "text", ['+HYPERLINK("http://x")', "=1+1", "+A1 ", "@SUM(A1)", "+cmd|' /C calc'!A0", "==", "=AAA"]
)
def test_anything_that_could_call_a_function_is_not_base64_and_keeps_the_guard(text):
    with pytest.raises(ValueError):
        base64_cell(text)
    assert safe_cell(text) == "'" + text


# --- Content-Disposition ---------------------------------------------------------------------


def _filenames(header: str) -> tuple[str, str]:
    """(filename, filename*) as a mail library reads them: the RFC 2231/5987 one decoded."""
    message = email.message.Message()
    message["Content-Disposition"] = header
    params = message.get_params(header="content-disposition")
    plain = next(value for name, value in params if name == "filename" and isinstance(value, str))
    extended = next(value for name, value in params if name == "filename" and isinstance(value, tuple))
    return plain, email.utils.collapse_rfc2231_value(extended)


def test_a_plain_name_is_the_same_in_both_parameters():
    assert attachment("audit-log.csv") == "attachment; filename=\"audit-log.csv\"; filename*=UTF-8''audit-log.csv"


@pytest.mark.parametrize(
    "name, fallback",
    [
        ("a\r\nSet-Cookie: x.csv", "a__Set-Cookie: x.csv"),
        ('q"uo\\te/x%41.csv', "q_uo_te_x_41.csv"),
        ("grüppe-日本.csv", "gr_ppe-__.csv"),
        ("", "download"),
    ],
)
def test_any_name_makes_an_ascii_header_with_the_exact_name_in_filename_star(name, fallback):
    header = attachment(name)
    assert header.isascii() and "\r" not in header and "\n" not in header
    assert _filenames(header) == (fallback, name)
    assert urllib.parse.unquote(header.split("filename*=UTF-8''")[1]) == name
    response = HttpResponse()
    response["Content-Disposition"] = header  # Django refuses CR/LF (BadHeaderError): it must not raise
    assert response["Content-Disposition"] == header  # and did not MIME-encode it


# --- downloads through the console -----------------------------------------------------------


@pytest.mark.django_db
def test_the_audit_csv_reads_back_neutralised_and_is_not_cached(viewer_client):
    first = audit.record("request", username="@SUM(1)", cluster="east", group=HYPERLINK, details={"reason": "=1+1"})
    second = audit.record("approve", username="+1", cluster="east", group="-1", details={"reason": "-1"})
    response = viewer_client.get("/audit/?cluster=east&format=csv")
    assert response["Content-Disposition"] == "attachment; filename=\"audit-log.csv\"; filename*=UTF-8''audit-log.csv"
    assert response["Cache-Control"] == NO_STORE
    body = b"".join(response.streaming_content)
    assert body.startswith(b"\xef\xbb\xbfid,at,")  # a UTF-8 BOM first (csvstream.BOM): Excel reads it as UTF-8
    rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
    assert rows == [
        ["id", "at", "username", "remote_addr", "action", "cluster", "group", "change_request", "details"],
        [str(second.pk), second.at.isoformat(), "'+1", "", "approve", "east", "'-1", "", '{"reason": "-1"}'],
        [str(first.pk), first.at.isoformat(), "'@SUM(1)", "", "request", "east", "'" + HYPERLINK, "",
         '{"reason": "=1+1"}'],
    ]  # fmt: skip


@pytest.fixture
def hostile_days(request):
    """Beside the report tests' orders and payments (their `days`): groups named like formulas,
    on D1 only, one with a negative count and a negative float (numbers that must stay numbers)."""
    request.getfixturevalue("days")
    for group in (HYPERLINK, "@SUM(1)", "+1"):
        GroupDay.objects.create(cluster="east", date=D1, group=group, **BASE)
    GroupDay.objects.create(cluster="east", date=D1, group="-1", **{**BASE, "consumed": -5, "lag_seconds_p95": -0.25})


@pytest.mark.django_db(transaction=True)
def test_report_csv_download_is_neutralised_with_numbers_intact(hostile_days, viewer_client):
    report = built(("csv",))
    name = report.files["csv"]
    response = viewer_client.get(f"/reports/{report.pk}/download.csv")
    assert response["Content-Disposition"] == f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}"
    assert response["Cache-Control"] == NO_STORE
    body = b"".join(response.streaming_content)
    assert body == read(report, "csv")
    assert body.startswith(b"\xef\xbb\xbf")  # the saved file has the BOM itself
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    groups = [r["group"] for r in rows if r["period start (UTC)"] == D1.isoformat()]
    assert groups == ["'+1", "'-1", "'" + HYPERLINK, "'@SUM(1)", "orders", "payments"]
    minus_one = next(r for r in rows if r["group"] == "'-1" and r["period start (UTC)"] == D1.isoformat())
    assert (minus_one["consumed"], minus_one["lag p95 (s)"], minus_one["status"]) == ("-5", "-0.25", "ok")
    gap = next(r for r in rows if r["group"] == "'-1" and r["period start (UTC)"] == D2.isoformat())
    assert (gap["status"], gap["consumed"]) == ("no statistics", "")


@pytest.mark.django_db(transaction=True)
def test_report_xlsx_download_has_text_cells_not_formulas_and_numeric_numbers(hostile_days, viewer_client):
    report = built(("xlsx",))
    name = report.files["xlsx"]
    response = viewer_client.get(f"/reports/{report.pk}/download.xlsx")
    assert response["Content-Disposition"] == f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}"
    book = load_workbook(io.BytesIO(b"".join(response.streaming_content)))
    daily = {(row[1].value, row[2].value.date()): row for row in book["Daily"].iter_rows(min_row=2)}
    link = daily[("'" + HYPERLINK, D1)]
    assert link[1].data_type == "s"  # an unquoted "=..." would load as a formula, data_type "f"
    minus_one = daily[("'-1", D1)]
    assert (minus_one[5].value, minus_one[5].data_type) == (-5, "n")  # consumed
    assert (minus_one[15].value, minus_one[15].data_type) == (-0.25, "n")  # lag p95 (s)
    summary = {row[1].value: row for row in book["Summary"].iter_rows(min_row=2)}
    assert set(summary) == {"'+1", "'-1", "'" + HYPERLINK, "'@SUM(1)", "orders", "payments"}
    assert (summary["'-1"][5].value, summary["'-1"][5].data_type) == (-5, "n")
    assert (summary["'-1"][2].value, summary["'-1"][3].value) == (1, 2)  # D1 with statistics, D2 and D3 without
    assert not any(c.data_type == "f" for sheet in book for row in sheet.iter_rows() for c in row)


@pytest.mark.django_db
def test_report_now_csv_and_xlsx_are_neutralised(viewer_client, redis):
    from devstack.synthetic import group, publish

    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:9876")
    publish(cluster, redis, [group(HYPERLINK, lag=3, queues=1, topic="@T"), group("-1", lag=0, queues=1, topic="+T")])
    response = viewer_client.get("/reports/now.csv?cluster=east")
    assert response["Cache-Control"] == NO_STORE
    name = response["Content-Disposition"].split('filename="')[1].split('"')[0]
    assert name.startswith("lag-now-east-") and name.endswith("Z.csv")
    body = b"".join(response.streaming_content)
    assert body.startswith(b"\xef\xbb\xbfcluster,group,")
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    assert [(r["group"], r["topic"], r["queue"], r["consumer offset"], r["lag (msgs)"], r["status"]) for r in rows] == [
        ("'-1", "'+T", "0", "100", "0", "ok"),
        ("'" + HYPERLINK, "'@T", "0", "97", "3", "ok"),
    ]
    sheet = load_workbook(io.BytesIO(viewer_client.get("/reports/now.xlsx?cluster=east").content))["Lag now"]
    rows = [list(row) for row in sheet.iter_rows(min_row=2)]
    assert [(r[1].value, r[2].value, r[7].value, r[8].value) for r in rows] == [
        ("'-1", "'+T", 100, 0),
        ("'" + HYPERLINK, "'@T", 97, 3),
    ]
    types = [(r[1].data_type, r[4].data_type, r[7].data_type, r[8].data_type) for r in rows]
    assert types == [("s", "n", "n", "n")] * 2  # group text; queue, consumer offset, lag numbers


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path, name",
    [
        ("/dlq/local/G1/export.csv?key=a%0D%0Ab", "dlq-G1-key=a\r\nb.csv"),
        ("/dlq/local/gr%C3%BCppe-%E6%97%A5%E6%9C%AC/export.jsonl?tag=%22x%22", 'dlq-grüppe-日本-tag="x".jsonl'),
    ],
)
def test_a_dlq_export_with_any_filter_answers_with_a_sane_header(client, personas, path, name):
    """Headers only: the body (read from a broker) streams lazily and is never read here."""
    Cluster.objects.create(name="local", namesrv_addrs="127.0.0.1:9876")
    client.force_login(personas["operator"])
    response = client.get(path)
    assert response.status_code == 200 and response["Cache-Control"] == NO_STORE
    assert response["Content-Disposition"] == attachment(name)
    assert _filenames(response["Content-Disposition"])[1] == name
    assert AuditEvent.objects.filter(action="dlq-export").count() == 1


def test_the_dlq_header_worked_by_hand():
    expected = "attachment; filename=\"dlq-G1-key=a__b.csv\"; filename*=UTF-8''dlq-G1-key%3Da%0D%0Ab.csv"
    assert attachment("dlq-G1-key=a\r\nb.csv") == expected


# --- Cache-Control ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_pages_and_the_api_are_not_stored_static_files_may_be(viewer_client, client, redis):
    page = viewer_client.get("/reports/")
    assert page.status_code == 200 and page["Cache-Control"] == NO_STORE
    api = viewer_client.get("/api/clusters/")
    assert api.status_code == 200 and api["Cache-Control"] == NO_STORE
    static = viewer_client.get("/static/vendor/plotly/plotly.min.js")
    # whitenoise's own caching (short unhashed, a year once collected with hashed names), never no-store
    assert (
        static.status_code == 200 and "no-store" not in static["Cache-Control"] and "public" in static["Cache-Control"]
    )
    viewer_client.logout()
    refused = client.get("/api/clusters/")
    assert refused.status_code == 401 and refused["Cache-Control"] == NO_STORE


class _User:
    is_authenticated = True


def _through_middleware(path: str, view) -> HttpResponse:
    request = RequestFactory().get(path)
    request.user = AnonymousUser()
    return NoStoreMiddleware(view)(request)


def _signs_in(request):
    request.user = _User()  # as api_view does with a token: the user is known only after the view
    return HttpResponse("data")


def test_the_user_is_read_after_the_view_ran():
    assert _through_middleware("/groups/", _signs_in)["Cache-Control"] == NO_STORE
    assert not _through_middleware("/groups/", lambda request: HttpResponse()).has_header("Cache-Control")
    assert not _through_middleware("/static/app.css", _signs_in).has_header("Cache-Control")


def test_a_response_that_chose_its_cache_control_keeps_it():
    def cached(request):
        request.user = _User()
        response = HttpResponse()
        response["Cache-Control"] = "max-age=60"
        return response

    assert _through_middleware("/groups/", cached)["Cache-Control"] == "max-age=60"
