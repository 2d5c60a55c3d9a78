from __future__ import annotations

import re


def test_every_response_says_how_long_the_server_took(client, db):
    response = client.get("/login/")
    assert re.fullmatch(r"app;dur=\d+\.\d\d", response["Server-Timing"])
