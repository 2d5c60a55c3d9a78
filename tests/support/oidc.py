"""A stand-in browser for Keycloak's own pages (requests): fills its login form and follows its
redirects up to the console's callback, which the Django test client then opens. Keycloak's
cookies are Secure; a browser sends them to http://127.0.0.1 (a trustworthy origin), requests
does not, so they are made plain here."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
from urllib.parse import parse_qs, urlencode, urlparse

import requests

LOGIN_FORM = re.compile(r'<form id="kc-form-login"[^>]*action="([^"]+)"')


class KeycloakBrowser:
    def __init__(self):
        self.session = requests.Session()

    def get(self, url: str) -> requests.Response:
        return self._plain(self.session.get(url, allow_redirects=False, timeout=60))

    def _plain(self, response: requests.Response) -> requests.Response:
        for cookie in self.session.cookies:
            cookie.secure = False
        return response

    def login_form(self, authorize_url: str) -> str | None:
        """The login form's action, or None when Keycloak signed in at once (its session lives)."""
        page = self.get(authorize_url)
        if page.is_redirect:
            return None
        found = LOGIN_FORM.search(page.text)
        assert found, page.text[:2000]
        return html.unescape(found.group(1))

    def sign_in(self, authorize_url: str, username: str, password: str) -> str:
        """Through Keycloak's login page to the redirect back: that URL (the console's callback)."""
        action = self.login_form(authorize_url)
        if action is None:
            return self.get(authorize_url).headers["Location"]
        answer = self._plain(
            self.session.post(
                action, data={"username": username, "password": password}, allow_redirects=False, timeout=60
            )
        )
        assert answer.status_code == 302, answer.text[:2000]
        return answer.headers["Location"]


def code_flow(issuer: str, client_id: str, secret: str, username: str, password: str, *, nonce: str) -> dict:
    """A whole authorization code flow (PKCE) for any client of the realm: its token response,
    signed by Keycloak. `issuer` may name the server by another host name (localhost): Keycloak
    then issues tokens with that issuer, signed with the same keys."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    redirect_uri = "http://127.0.0.1:9/callback"
    query = {"client_id": client_id, "response_type": "code", "scope": "openid", "redirect_uri": redirect_uri,
             "state": "s", "nonce": nonce, "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
    back = KeycloakBrowser().sign_in(f"{issuer}/protocol/openid-connect/auth?{urlencode(query)}", username, password)
    code = parse_qs(urlparse(back).query)["code"][0]
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": verifier}
    response = requests.post(f"{issuer}/protocol/openid-connect/token", data=data, auth=(client_id, secret), timeout=60)
    response.raise_for_status()
    return response.json()
