"""The suite runs on the database DATABASE_URL names: SQLite by default, PostgreSQL when
`make test` reruns the database tests through devstack.postgres."""

from __future__ import annotations

import os

from django.db import connection


def test_the_tests_use_the_configured_database(db):
    expected = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    assert connection.vendor == expected
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
