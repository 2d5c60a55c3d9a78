"""The environment the demo's console runs in, set before Django reads its settings (which
are read once, at `django.setup()`): production's, but for plain HTTP on loopback, and with
`--sso` the single sign-on settings of the demo's Keycloak. The demo's children (web server,
Celery worker and beat, statistics run) inherit it.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from .processes import free_port, port_is_free
from .runtime import PROJECT_ROOT


def sso_requested() -> bool:
    """`--sso` or DEMO_SSO=1: Keycloak as the demo's identity provider. Read before the settings
    are (at import), since they name the issuer."""
    return "--sso" in sys.argv[1:] or os.environ.get("DEMO_SSO", "").lower() in ("1", "true", "yes")


def sso_environment() -> int:
    """The console's single sign-on settings for the demo's Keycloak; its port."""
    from .keycloak import console_client

    port = int(os.environ.get("DEMO_KEYCLOAK_PORT") or 0) or (8180 if port_is_free(8180) else free_port())
    client = console_client()
    os.environ.setdefault("OIDC_ISSUER", f"http://127.0.0.1:{port}/realms/console")
    os.environ.setdefault("OIDC_CLIENT_ID", client["clientId"])
    os.environ.setdefault("OIDC_CLIENT_SECRET", client["secret"])
    return port


def production_like_environment() -> None:
    """The demo runs as production does: DEBUG off, gunicorn, collected static files with
    hashed names. What differs is only what plain HTTP on loopback needs: no HTTPS redirect,
    no HSTS, cookies without the Secure flag, and a secret key made once and kept in VAR_DIR.
    Its children (web server, Celery worker and beat, statistics run) inherit this environment."""
    var = Path(os.environ.get("VAR_DIR") or PROJECT_ROOT / "var") / "demo"
    os.environ["DEBUG"] = "false"
    if not os.environ.get("SECRET_KEY"):
        key_file = var / "secret-key"
        if not key_file.exists():
            var.mkdir(parents=True, exist_ok=True)
            key_file.write_text(secrets.token_urlsafe(50))
            key_file.chmod(0o600)
        os.environ["SECRET_KEY"] = key_file.read_text().strip()
    for name, value in {"SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0", "SESSION_COOKIE_SECURE": "false",
                        "CSRF_COOKIE_SECURE": "false", "STATIC_MANIFEST": "true",
                        "STATIC_ROOT": str(var / "static")}.items():  # fmt: skip
        os.environ.setdefault(name, value)
