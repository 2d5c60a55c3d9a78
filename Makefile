# The two commands a newcomer needs:
#   make demo   set everything up and run the demo at http://127.0.0.1:8000 (Ctrl-C stops it)
#   make test   set everything up and run the whole test suite
.PHONY: demo stop test lint

demo:
	./scripts/setup.sh demo
	.venv/bin/python -m devstack.demo

stop:
	.venv/bin/python -m devstack.demo --stop

test:
	./scripts/setup.sh test
	./scripts/test.sh

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

# Benchmarks (each starts what it needs and prints its figures; a few minutes each)
.PHONY: bench
bench:
	./scripts/setup.sh test
	.venv/bin/python -m bench.bench_fastjson
	.venv/bin/python -m bench.bench_snapshot
	.venv/bin/python -m bench.bench_poll
	.venv/bin/python -m bench.bench_pages
	.venv/bin/python -m bench.bench_dlq_overview
	.venv/bin/python -m bench.bench_track
	.venv/bin/python -m bench.bench_poll_period
	.venv/bin/python -m bench.bench_reset_preview
	.venv/bin/python -m bench.bench_reset_run
	.venv/bin/python -m bench.bench_redrive --cpus split
	.venv/bin/python -m bench.bench_redrive --cpus shared
	.venv/bin/python -m bench.bench_stats
	.venv/bin/python -m bench.bench_reports
	.venv/bin/python -m bench.bench_metrics
	.venv/bin/python -m bench.bench_alerts
	.venv/bin/python -m bench.bench_worker_limits
	.venv/bin/python -m bench.bench_capture
