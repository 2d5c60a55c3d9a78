"""htmx and plotly.js come from static files of the pinned packages, never from a CDN."""

from __future__ import annotations

import re
from pathlib import Path

import plotly
from django.conf import settings
from django.contrib.staticfiles import finders


def test_the_vendored_scripts_are_found_and_match_the_pinned_packages():
    plotly_js = Path(finders.find("vendor/plotly/plotly.min.js"))
    header = plotly_js.read_text()[:300]
    assert re.search(r"plotly\.js v(\S+)", header).group(1) == plotly.offline.get_plotlyjs_version()
    assert finders.find("django_htmx/htmx-2.min.js")


def test_no_template_loads_a_script_from_elsewhere():
    for template in (settings.BASE_DIR / "templates").rglob("*.html"):
        text = template.read_text()
        assert not re.search(r'<(script|link)[^>]+(src|href)="(https?:)?//', text), template


def test_the_favicon_is_a_static_file_and_favicon_ico_leads_to_it(client):
    """Browsers and bookmarks ask for /favicon.ico whatever the page links: not a 404."""
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("img/favicon.svg")
    page = client.get("/login/").content.decode()
    assert 'rel="icon"' in page and "img/favicon.svg" in page
