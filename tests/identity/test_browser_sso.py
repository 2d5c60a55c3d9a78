"""Single sign-on in headless Chromium: the console's login page, Keycloak's own login page,
back to the console, then logout through Keycloak (which then asks for the password again)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from consumers.identity import IdpAccount

pytestmark = [
    pytest.mark.browser,
    pytest.mark.keycloak,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


@pytest.fixture(autouse=True)
def sso(settings, keycloak):
    from consumers.identity import ensure_roles

    ensure_roles()  # the role groups: a transactional test before this one may have emptied the database
    settings.OIDC_ISSUER = keycloak.issuer
    settings.OIDC_CLIENT_ID = keycloak.client_id
    settings.OIDC_CLIENT_SECRET = keycloak.client_secret
    settings.OIDC_TIMEOUT = 60  # a Keycloak on 2 cores shared with a RocketMQ test run
    return keycloak


def test_alice_signs_in_through_keycloak_and_out_of_both(page, live_server, keycloak, redis):
    # Keycloak's client allows redirects to http://127.0.0.1:<any port>
    base = live_server.url.replace("localhost", "127.0.0.1")
    page.set_default_timeout(90_000)  # Keycloak's pages on 2 cores shared with a RocketMQ test run
    page.goto(base + "/groups/")
    assert "/login/" in page.url and page.locator("#id_password").count() == 1  # both ways offered
    page.click("#sso-login")
    page.wait_for_url(keycloak.url + "/**")
    page.fill("#username", "alice")
    page.fill("#password", keycloak.users["alice"]["password"])
    page.click("#kc-login")
    page.wait_for_url(base + "/groups/")
    assert page.locator("#no-access").count() == 1 and "payments" in page.locator("#no-access").inner_text()

    account = IdpAccount.objects.select_related("user").get(subject=keycloak.user_id("alice"))
    assert list(account.user.groups.values_list("name", flat=True)) == ["idp:payments"]
    account.user.groups.add(Group.objects.get(name="viewer"))  # an admin gives her a role
    page.reload()
    assert page.locator("#groups").count() == 1

    page.click("#logout")  # Log out (the header also has the language switch's buttons)
    page.wait_for_url(base + "/login/**")
    page.click("#sso-login")
    page.wait_for_url(keycloak.url + "/**")
    assert page.locator("#password").is_visible()  # Keycloak's session ended: it asks again
