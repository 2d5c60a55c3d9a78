#!/usr/bin/env bash
# The whole test suite: lint, migrations check, then every test on SQLite (with the real local
# RocketMQ, Redis and headless Chromium) and the database tests again on PostgreSQL.
#
# The tests run in two lanes side by side:
#   cluster: the tests on the session's RocketMQ cluster or Keycloak (marked cluster_lane by
#            tests/conftest.py). They mostly wait on brokers, clients and JVMs.
#   python:  the rest (most keep a core busy; some drive Chromium or start a RocketMQ of their
#            own), then the PostgreSQL runs.
# Each lane runs on two pytest-xdist workers that take a test at a time, those of the modules with
# slow tests first (why not a module at a time: tests/conftest.py). Each worker is a session of
# its own (its own cluster when a test asks for one, Redis, database, temporary folders) with
# ports of its own: the lane's block (FREE_PORTS, devstack/processes.py) shared out by
# tests/conftest.py. The python lane's report is printed when both are done. Arguments go to
# both lanes' pytest (a lane with nothing selected passes).
set -euo pipefail
cd "$(dirname "$0")/.."
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}
# development settings: DEBUG defaults to false, which needs a SECRET_KEY and redirects to HTTPS
# (pytest-django still runs each test with settings.DEBUG off)
export DEBUG=true

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python manage.py makemigrations --check --dry-run

WORKERS="-n 2 --dist load"

# pytest's status, with "no tests were selected" (5) counted as passed
run_pytest() {
  local status=0
  .venv/bin/python -m pytest "$@" || status=$?
  [ "$status" = 5 ] && status=0
  return "$status"
}

python_lane() {
  local status=0
  export FREE_PORTS=20000-29999
  run_pytest -p no:cacheprovider $WORKERS -m "not cluster_lane" --durations=20 "$@" || status=1
  echo "--- database tests again, on a throwaway PostgreSQL ---"
  .venv/bin/python -m devstack.postgres -- .venv/bin/python -m pytest -p no:cacheprovider $WORKERS -m "not broker and not browser" \
    tests/test_database.py tests/identity/test_auth.py tests/live/test_views.py tests/live/test_api.py tests/live/test_tasks.py \
    tests/test_models.py tests/changes tests/reports tests/stats/test_views.py tests/alerts/test_evaluate.py tests/alerts/test_delivery.py \
    tests/stats/test_runs.py::test_overlapping_runs_are_refused tests/identity/test_grants.py tests/identity/test_scoped_access.py \
    || status=1
  echo "--- races between workers and between approvers, on PostgreSQL (row locks, concurrent writers) ---"
  .venv/bin/python -m devstack.postgres -- .venv/bin/python -m pytest -p no:cacheprovider -k "racing or race" \
    tests/changes/test_workflow.py tests/resets/test_resets.py || status=1
  return "$status"
}

# The two builds a few tests need (helm from its Go sources, the console's image: minutes each,
# cold) run first, side by side, before any test: started beside the tests they were starved for
# CPU (load 20 on two cores, even niced they crawled) or starved the tests into their timeouts.
# Built, they are found by those tests (a build is kept by its sources' digest); a failed build is
# tried again by the test, which then reports why.
if [ $# = 0 ]; then
  prebuilt=$SECONDS
  .venv/bin/python -m devstack.helm >/dev/null 2>&1 &
  helm_pid=$!
  .venv/bin/python -m devstack.containers build --target web >/dev/null 2>&1 || true
  wait "$helm_pid" || true
  echo "--- helm and the image built in $((SECONDS - prebuilt)) s ---"
fi

python_log=$(mktemp)
started=$SECONDS
python_lane "$@" >"$python_log" 2>&1 &
python_pid=$!
cluster_status=0
FREE_PORTS=10000-19999 run_pytest $WORKERS -m cluster_lane --durations=30 "$@" || cluster_status=$?
echo "--- cluster lane done after $((SECONDS - started)) s; waiting for the python lane ---"
python_status=0
wait "$python_pid" || python_status=$?
echo "--- python lane (tests without the cluster, then PostgreSQL), done after $((SECONDS - started)) s ---"
cat "$python_log"
rm -f "$python_log"
echo "--- cluster lane: $([ $cluster_status = 0 ] && echo passed || echo FAILED); python lane: $([ $python_status = 0 ] && echo passed || echo FAILED)"
[ "$cluster_status" = 0 ] && [ "$python_status" = 0 ]
