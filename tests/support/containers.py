"""What the image's and the chart's tests share: the image, built once per session (and per
source: devstack/containers.py), and a site for it: a Redis and a PostgreSQL of the test's own,
the volume, the production environment, a migrated database with a user and the session's
cluster, polled every 5 s."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from devstack import containers
from devstack.postgres import LocalPostgres
from devstack.redis import LocalRedis
from tests.test_package import PASSWORD, _production_environment, _request

UID = 10001  # the image's user (Containerfile)
POLL_INTERVAL = 5


@pytest.fixture(scope="session")
def web_image() -> containers.Image:
    image = containers.build("web")
    print(f"\n  image {image.tag}: {image.size / 1e6:.0f} MB, built in {image.built_seconds:.0f} s "
          f"(its Debian base in {image.base_seconds:.0f} s; 0: built before)")  # fmt: skip
    return image


@dataclass
class Site:
    environment: dict[str, str]  # every container's, secrets included
    volume: Path  # VAR_DIR's folder on this host

    def polled(self) -> bool:
        return any(self.volume.glob("history/group_stats/cluster=image/date=*/*.parquet"))


@contextlib.contextmanager
def site(image: containers.Image, tmp_path: Path, namesrv: str):
    redis, postgres = LocalRedis(tmp_path / "redis"), LocalPostgres()  # its own folder: it runs as postgres
    try:
        volume = tmp_path / "var"
        volume.mkdir()
        os.chown(volume, UID, UID)
        environment = {
            key: value
            for key, value in _production_environment(tmp_path).items()
            if key not in ("PATH", "HOME", "VAR_DIR", "STATIC_ROOT", "SECRET_KEY_FILE")  # the image's own
        }
        environment.update(SECRET_KEY="image-test-" + "s" * 50, DATABASE_URL=postgres.url, REDIS_URL=redis.url,
                           CONSOLE_PASSWORD=PASSWORD)  # fmt: skip
        create = (
            "from consumers.models import Cluster as C;"
            f" C.objects.create(name='image', namesrv_addrs='{namesrv}', poll_interval={POLL_INTERVAL})"
        )
        steps = [
            "rocketmq-console migrate --no-input",
            "rocketmq-console create-user ops-admin --role admin --password-env CONSOLE_PASSWORD",
            f'rocketmq-console manage shell -c "{create}"',
        ]  # in one container: each costs a copy of the image
        ready = containers.run_once(image.tag, ["-c", " && ".join(steps)], env=environment, entrypoint="/bin/sh")
        assert ready.returncode == 0 and "ops-admin: admin" in ready.stdout, ready.stdout + ready.stderr
        yield Site(environment, volume)
    finally:
        redis.stop()
        postgres.stop()


def run(image: containers.Image, args: list[str], environment: dict[str, str]):
    return containers.run_once(image.tag, args, env=environment)


def answers(port: int, path: str = "/healthz") -> bool:
    try:
        return _request(port, "GET", path)[0].status == 200
    except OSError:
        return False
