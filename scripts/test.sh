#!/usr/bin/env bash
# The whole test suite: lint, migrations check, every test on SQLite (with the real local
# RocketMQ, Redis and headless Chromium), then the database tests again on PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}
# development settings: DEBUG defaults to false, which needs a SECRET_KEY and redirects to HTTPS
# (pytest-django still runs each test with settings.DEBUG off)
export DEBUG=true

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python manage.py makemigrations --check --dry-run
.venv/bin/python -m pytest --durations=30 "$@"  # the slowest tests: where CI time goes
echo "--- database tests again, on a throwaway PostgreSQL ---"
.venv/bin/python -m devstack.postgres -- .venv/bin/python -m pytest -m "not broker and not browser" \
  tests/test_database.py tests/identity/test_auth.py tests/live/test_views.py tests/live/test_api.py tests/live/test_tasks.py \
  tests/test_models.py tests/changes tests/reports tests/stats/test_views.py tests/alerts/test_evaluate.py tests/alerts/test_delivery.py \
  tests/stats/test_runs.py::test_overlapping_runs_are_refused tests/identity/test_grants.py tests/identity/test_scoped_access.py
echo "--- races between workers and between approvers, on PostgreSQL (row locks, concurrent writers) ---"
.venv/bin/python -m devstack.postgres -- .venv/bin/python -m pytest -k "racing or race" \
  tests/changes/test_workflow.py tests/resets/test_resets.py
