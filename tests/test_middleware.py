from __future__ import annotations

import re


def test_every_response_says_how_long_the_server_took(client, db):
    response = client.get("/login/")
    assert re.fullmatch(r"app;dur=\d+\.\d\d", response["Server-Timing"])


def _raised_from(cause: Exception, outer: Exception) -> Exception:
    try:
        try:
            raise cause
        except Exception as exc:
            raise outer from exc
    except Exception as raised:
        return raised


def test_a_task_that_cannot_be_queued_because_redis_is_down_answers_503_not_500(rf, db, settings):
    """Celery raises its own OperationalError when Redis refuses, raised from Redis's error."""
    import redis
    from django.contrib.auth.models import AnonymousUser
    from kombu.exceptions import OperationalError

    from consumers.jobs import redis_client
    from consumers.web.middleware import RedisUnavailableMiddleware

    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    middleware = RedisUnavailableMiddleware(lambda request: None)
    refused = redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    queued = _raised_from(refused, OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused."))
    try:
        api = middleware.process_exception(rf.post("/api/changes/1/approve/"), queued)
        assert api.status_code == 503 and api["Content-Type"] == "application/json"
        assert "Redis at 127.0.0.1:6379 does not answer (Error 111" in api.content.decode()
        request = rf.get("/stats/jobs/run/")
        request.user = AnonymousUser()
        page = middleware.process_exception(request, queued)
        assert page.status_code == 503 and b'id="redis-outage"' in page.content
        assert middleware.process_exception(request, _raised_from(ValueError("x"), RuntimeError("y"))) is None
    finally:
        redis_client.note_answered()


def test_a_database_that_does_not_answer_is_a_503_from_a_view_and_from_a_middleware(rf, db):
    """A view's error reaches DatabaseUnavailableMiddleware; one raised by a middleware before the
    view (the session's lookup) reaches the 500 handler while Django handles it: both a 503."""
    import json
    import sys

    from django.db.utils import OperationalError

    from consumers.web.errors import handle_500, note_database_answered
    from consumers.web.middleware import DatabaseUnavailableMiddleware

    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    down = OperationalError("connection failed: Connection refused")
    try:
        api = middleware.process_exception(rf.get("/api/groups/"), down)
        assert api.status_code == 503 and json.loads(api.content)["error"].startswith("Database unavailable since ")
        page = middleware.process_exception(rf.get("/groups/"), down)
        assert page.status_code == 503 and b'id="database-outage"' in page.content
        assert middleware.process_exception(rf.get("/groups/"), ValueError("x")) is None
        try:
            raise down
        except OperationalError:
            assert sys.exception() is down
            assert handle_500(rf.get("/groups/")).status_code == 503
        try:
            raise ValueError("not the database")
        except ValueError:
            assert handle_500(rf.get("/api/groups/")).status_code == 500
    finally:
        note_database_answered()


def test_an_unexpected_error_is_the_consoles_own_500_never_a_traceback(client, personas, redis, monkeypatch):
    """Whatever fails inside a view: the page is templates/500.html, the API a JSON 500, and
    neither carries a traceback, a setting or the exception's text."""
    from django.test import Client

    def broken(*args, **kwargs):
        raise RuntimeError("secret-internal-detail")

    monkeypatch.setattr("consumers.live.selectors.cluster_states", broken)
    browser = Client(raise_request_exception=False)
    browser.force_login(personas["viewer"])
    page = browser.get("/clusters/")
    text = page.content.decode()
    assert page.status_code == 500 and "Something went wrong on our side" in text
    assert "Traceback" not in text and "secret-internal-detail" not in text and "SECRET_KEY" not in text
    api = browser.get("/api/clusters/")
    assert api.status_code == 500 and api["Content-Type"] == "application/json"
    assert api.json()["error"] == "server error"
    assert "secret-internal-detail" not in api.content.decode()
