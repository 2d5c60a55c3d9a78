"""The console's image (Containerfile, target web), built here with buildah and run with podman:
web, worker and beat containers, read-only root filesystems, against the session's RocketMQ
cluster, a Redis and a PostgreSQL of the test's own. A poll lands in the history on the volume,
pages answer through the container's gunicorn, /readyz is 200; a missing setting stops a
container at once naming it; SIGTERM stops each one cleanly.

Real parts: buildah and podman (Debian's), the image built from Debian's bookworm packages
(devstack/containers.py), redis-server, PostgreSQL, the RocketMQ cluster."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from devstack import containers
from devstack.processes import free_port
from tests.support.containers import answers, run, site, web_image  # noqa: F401 (a fixture)
from tests.support.scenarios import wait
from tests.test_package import _pages_static_files_and_a_login, _request

pytestmark = [pytest.mark.slow, pytest.mark.broker]


def test_web_worker_and_beat_from_the_image_poll_and_serve(web_image, tmp_path: Path, namesrv, mqadmin, names):  # noqa: F811
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", names.group("image"))  # a group every poll finds
    port = free_port()
    running = []
    with site(web_image, tmp_path, namesrv) as ours:
        try:
            serve = ["serve", "--bind", f"127.0.0.1:{port}", "--workers", "2", "--threads", "4", "--no-collectstatic"]
            for name, args in (("web", serve), ("worker", ["worker", "-c", "2"]), ("beat", ["beat"])):
                running.append(containers.Container(f"console-{name}-{port}", web_image.tag, args,
                                                    env=ours.environment,
                                                    volumes={ours.volume: "/var/lib/rocketmq-console"}))  # fmt: skip
            web, worker, beat = running
            wait(lambda: answers(port) or not web.running(), 120, "the web container answers /healthz")
            assert web.running(), web.logs()
            wait(ours.polled, 120, "a poll in the history, written by the worker container on the volume")
            wait(lambda: answers(port, "/readyz"), 60, "/readyz 200")
            ready = json.loads(_request(port, "GET", "/readyz")[1])
            assert ready["checks"] == {"database": "ok", "redis": "ok", "polls": "ok"}, ready
            _pages_static_files_and_a_login(port)
            for container in running:
                assert container.running(), container.logs()
            assert "beat: active" in beat.logs(), beat.logs()

            # SIGTERM: gunicorn drains, the worker ends warm, beat releases its lock; each exits 0
            stopped = {c.name.split("-")[1]: c.stop(30) for c in running}
            assert stopped == {"web": 0, "worker": 0, "beat": 0}, stopped
            running.clear()
        finally:
            for container in running:
                container.stop(5)


def test_a_container_without_a_required_setting_exits_at_once_naming_it(web_image):  # noqa: F811
    started = time.monotonic()
    result = run(web_image, ["worker"], {"DEBUG": "false"})  # no SECRET_KEY
    output = result.stdout + result.stderr
    assert result.returncode != 0 and time.monotonic() - started < 60, output
    assert "SECRET_KEY" in output and "Traceback" not in output, output
