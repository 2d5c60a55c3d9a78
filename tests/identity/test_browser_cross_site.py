"""A page on another site tries to approve a reset in an approver's logged-in browser (the attack
of the security issue): an auto-submitted text/plain form and no-cors fetches to the API, a
fetch that carries the approver's API token, and a form to the page's own decide URL. Served
by a second local HTTP server on another port: another origin, as a real attacker's page is.
Nothing may change, and each attempt must have been refused by the console, not just lost."""

from __future__ import annotations

import http.server
import threading

import pytest

from consumers.audit.models import AuditEvent
from consumers.changes import workflow
from consumers.changes.models import ChangeRequest
from consumers.changes.workflow import Actor
from consumers.identity import access, create_token
from consumers.models import Cluster
from tests.conftest import PASSWORD, new_context
from tests.test_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

EVIL = """<!doctype html><html><body>
<iframe name="sink1" style="display:none"></iframe><iframe name="sink2" style="display:none"></iframe>
<form id="plain" method="post" action="{api}" enctype="text/plain" target="sink1">
  <input name='{{"reason":"' value='x"}}'></form>
<form id="page" method="post" action="{page}" target="sink2"><input name="action" value="approve"></form>
<script>
(async () => {{
  const results = [];
  document.getElementById("plain").submit();
  document.getElementById("page").submit();
  for (const init of [
    {{method: "POST", mode: "no-cors", credentials: "include", body: "{{}}",
      headers: {{"Content-Type": "text/plain"}}}},
    {{method: "POST", credentials: "include", body: "{{}}", headers: {{"Content-Type": "application/json"}}}},
    {{method: "POST", body: "{{}}",
      headers: {{"Content-Type": "application/json", "Authorization": "Bearer {token}"}}}},
  ]) {{
    try {{ const r = await fetch("{api}", init); results.push("answered " + r.type); }}
    catch (e) {{ results.push("blocked"); }}
  }}
  await new Promise(r => setTimeout(r, 1500));  // let the forms' posts land
  document.title = "done " + results.join(",");
}})();
</script></body></html>"""


def _serve(html: str) -> http.server.ThreadingHTTPServer:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("credentials", ["session", "basic"])
def test_another_site_cannot_approve_through_the_approvers_browser(
    browser, live_server, personas, monkeypatch, settings, credentials
):
    cluster = Cluster.objects.create(name="east", namesrv_addrs="127.0.0.1:1")
    change = workflow.submit(actor=Actor(personas["operator"], "10.0.0.1"), cluster=cluster, group="orders",
                             kind="reset", params={"strategy": "earliest"}, plan={"rows": [], "totals": {}},
                             reason="replay")  # fmt: skip
    _, secret = create_token(personas["approver"], name="script", days=1)
    refusals = []
    real = access._write_refused

    def watched(request, via):
        answer = real(request, via)
        refusals.append((request.method, via, answer.status_code if answer else None))
        return answer

    monkeypatch.setattr(access, "_write_refused", watched)
    anonymous = []
    unauthenticated = access._unauthenticated
    monkeypatch.setattr(
        access, "_unauthenticated", lambda request, via: anonymous.append(via) or unauthenticated(request, via)
    )
    if credentials == "basic":
        # HTTP Basic turned on, and a browser that holds the approver's password: it offers it
        # only when challenged for Basic, which the API never does (it asks for a Bearer token)
        settings.API_BASIC_AUTH = True
        context = new_context(browser, http_credentials={"username": "approver", "password": PASSWORD})
        page = context.new_page()
        assert page.goto(f"{live_server.url}/api/changes/").status == 401
    else:
        context = new_context(browser)
        page = context.new_page()
        log_in(page, live_server.url, "approver", "/changes/")
    api = f"{live_server.url}/api/changes/{change.pk}/approve/"
    # same host name, another port: another origin but the same site, so the session cookie
    # (SameSite=Lax) goes along, as it would from a sibling subdomain
    evil = _serve(EVIL.format(api=api, page=f"{live_server.url}/changes/{change.pk}/decide/", token=secret))
    try:
        page.goto(f"http://localhost:{evil.server_address[1]}/")
        page.wait_for_function("document.title.startsWith('done')", timeout=20_000)
        title = page.title()
    finally:
        evil.shutdown()
        context.close()
    change.refresh_from_db()
    assert change.state == "pending" and change.decided_by is None
    assert not AuditEvent.objects.filter(action="approve").exists() and ChangeRequest.objects.count() == 1
    # the text/plain form and no-cors fetch reached the console with the credentials and were
    # refused for their type; the JSON fetches (cookie, token) never left the browser: their
    # content type and Authorization header need a CORS preflight the API does not grant
    if credentials == "session":
        assert refusals == [("POST", "session", 415)] * 2 and not anonymous, refusals
    else:  # the password never went along: both reached the API as anonymous
        assert not refusals and anonymous == ["session"] * 3, (refusals, anonymous)
    assert title == "done answered opaque,blocked,blocked", title
