"""The console's images built and run on this machine with Debian's buildah and podman: no
Docker engine and no image registry, so the base image is made from Debian's packages
(debootstrap: bookworm with its python3.11), and what the sandbox needs is set on every call
(runc, not crun; cgroupfs; the vfs storage driver; host networking on 127.0.0.1; small ulimits).

    python -m devstack.containers build [--target web|full]   builds (and prints size and time)

Images are tagged by a digest of what goes into them, so a session (or several pytest workers,
one at a time under a file lock) builds each source once.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from devstack.processes import low_priority

ROOT = Path(__file__).resolve().parent.parent
BASE = "localhost/rocketmq-console-base:bookworm"
# one storage for buildah and podman (vfs: overlay mounts fail in this sandbox); the runtime,
# cgroup manager and ulimits every podman call (kube play too) needs here are in containers.conf
STORAGE = ["--storage-driver", "vfs"]
ENVIRONMENT = {**os.environ, "CONTAINERS_CONF": str(Path(__file__).with_name("containers.conf"))}
# what the Containerfile copies: the image's tag is a digest of these
SOURCES = ["Containerfile", "requirements.txt", "pyproject.toml", "README.md", "dashboard", "consumers", "templates",
           "static", "locale"]  # fmt: skip
# the build's RUN steps trust what this host trusts (a TLS-intercepting proxy's authority, say);
# mounted while building, never part of an image
HOST_CAS = Path("/etc/ssl/certs/ca-certificates.crt")
LOCK = Path(tempfile.gettempdir()) / "rocketmq-console-images.lock"


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *STORAGE, *args], capture_output=True, text=True, timeout=timeout, check=check,
                          env=ENVIRONMENT)  # fmt: skip


def exists(image: str) -> bool:
    return podman("image", "exists", image, check=False).returncode == 0


def size(image: str) -> int:
    """The image's size in bytes, as podman reports it (uncompressed)."""
    return int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())


def _mirror() -> str:
    """The Debian mirror this host's apt uses (deb.debian.org when none is found)."""
    for sources in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    return "http://deb.debian.org/debian"


def build_base() -> float:
    """bookworm (minbase) with python3.11 and its venv, imported as BASE; the seconds it took (0
    when it was there)."""
    if exists(BASE):
        return 0.0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="console-base-") as folder:
        rootfs = Path(folder) / "rootfs"
        packages = "python3.11,python3.11-venv,python3-distutils,python3-lib2to3,ca-certificates"
        bootstrap = ["debootstrap", "--variant=minbase", f"--include={packages}", "bookworm", str(rootfs), _mirror()]
        subprocess.run(low_priority(bootstrap), capture_output=True, text=True, timeout=900, check=True)
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
            shutil.rmtree(rootfs / leftover, ignore_errors=True)
        tar = subprocess.Popen(low_priority(["tar", "-C", str(rootfs), "-c", "."]), stdout=subprocess.PIPE)
        subprocess.run(low_priority(["podman", *STORAGE, "import", "-", BASE]), stdin=tar.stdout, capture_output=True,
                       timeout=600, check=True)  # fmt: skip
        tar.wait(60)
    return time.monotonic() - started


def source_digest() -> str:
    digest = hashlib.sha256()
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", *SOURCES],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    for name in sorted(n for n in listed.decode().split("\0") if n):
        path = ROOT / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


@dataclass
class Image:
    tag: str
    target: str
    built_seconds: float  # 0: it was built before, from the same sources
    base_seconds: float
    size: int


def build(target: str = "web") -> Image:
    """The image of `target` for the checkout's sources, built unless it exists (one build at a
    time on this machine)."""
    LOCK.touch(exist_ok=True)
    with open(LOCK) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        base_seconds = build_base()
        tag = f"localhost/rocketmq-console:{target}-{source_digest()}"
        started, seconds = time.monotonic(), 0.0
        if not exists(tag):
            mounts = ["-v", f"{HOST_CAS}:{HOST_CAS}:ro"] if HOST_CAS.is_file() else []
            built = subprocess.run(
                low_priority(["buildah", *STORAGE, "bud", "--isolation", "chroot", "--target", target,
                              "--build-arg", f"BASE={BASE}", *mounts, "-t", tag, "-f", "Containerfile", "."]),
                cwd=ROOT, capture_output=True, text=True, timeout=1800, env=ENVIRONMENT,
            )  # fmt: skip
            if built.returncode != 0:
                output = built.stdout[-4000:] + built.stderr[-4000:]
                raise RuntimeError(f"buildah bud --target {target} failed:\n{output}")
            seconds = time.monotonic() - started
            for other in podman("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split():
                if other.startswith(f"localhost/rocketmq-console:{target}-") and other != tag:
                    podman("rmi", other, check=False)  # an older source's: vfs keeps every layer whole
        return Image(tag, target, seconds, base_seconds, size(tag))


class Container:
    """`podman run -d` of an image with the host's network, removed when stopped."""

    def __init__(self, name: str, image: str, args: list[str], *, env: dict[str, str], volumes: dict[Path, str],
                 read_only: bool = True):  # fmt: skip
        self.name = name
        podman("rm", "-f", name, check=False)
        options = [f"--env={k}={v}" for k, v in env.items()]
        options += [f"--volume={host}:{inside}" for host, inside in volumes.items()]
        options += ["--read-only"] if read_only else []  # podman mounts a tmpfs on /tmp then
        podman("run", "-d", "--name", name, "--network", "host", *options, image, *args)

    def logs(self) -> str:
        found = podman("logs", self.name, check=False)
        return found.stdout + found.stderr

    def running(self) -> bool:
        state = podman("inspect", "--format", "{{.State.Running}}", self.name, check=False)
        return state.stdout.strip() == "true"

    def stop(self, grace: int = 20) -> int | None:
        """SIGTERM, SIGKILL after `grace` s; the exit code (None: it was never there)."""
        podman("stop", "-t", str(grace), self.name, timeout=grace + 60, check=False)
        code = podman("inspect", "--format", "{{.State.ExitCode}}", self.name, check=False)
        podman("rm", "-f", self.name, check=False)
        return int(code.stdout.strip()) if code.returncode == 0 else None


def run_once(image: str, args: list[str], *, env: dict[str, str], timeout: float = 300,
             entrypoint: str | None = None) -> subprocess.CompletedProcess:  # fmt: skip
    """A one-off container (migrate, create-user), removed when it ends. With vfs each container
    starts from a whole copy of the image (about 10 s here): steps that can share one should."""
    options = [f"--env={k}={v}" for k, v in env.items()]
    options += [f"--entrypoint={entrypoint}"] if entrypoint else []
    command = ["run", "--rm", "--network", "host", "--read-only", *options, image, *args]
    return podman(*command, timeout=timeout, check=False)


class Played:
    """Kubernetes manifests run by `podman kube play` (Deployments become pods, ConfigMaps are read
    from the same file). podman 4.3 takes a Secret as its own secret holding a JSON map of the
    keys to their base64 values (given a Secret document, it stores one it cannot read back), so
    the Secrets are made that way first."""

    def __init__(self, manifests: list[dict], folder: Path):
        self.file = folder / "play.yaml"
        self.secrets = []
        for secret in (m for m in manifests if m["kind"] == "Secret"):
            values = {**{k: v.encode() for k, v in secret.get("stringData", {}).items()},
                      **{k: base64.b64decode(v) for k, v in secret.get("data", {}).items()}}  # fmt: skip
            path = folder / f"secret-{secret['metadata']['name']}.json"
            path.write_text(json.dumps({k: base64.b64encode(v).decode() for k, v in values.items()}))
            podman("secret", "rm", secret["metadata"]["name"], check=False)
            podman("secret", "create", secret["metadata"]["name"], str(path))
            self.secrets.append(secret["metadata"]["name"])
        self.file.write_text(yaml.safe_dump_all([m for m in manifests if m["kind"] != "Secret"]))
        played = podman("kube", "play", str(self.file), timeout=600, check=False)
        if played.returncode != 0:
            self.down()
            raise RuntimeError(f"podman kube play failed:\n{played.stderr[-4000:]}")
        # each Deployment's pod is "<name>-pod-<n>", its containers "<pod>-<container>"
        deployments = tuple(f"{m['metadata']['name']}-pod-" for m in manifests if m["kind"] == "Deployment")
        names = podman("ps", "--format", "{{.Names}}").stdout.split()
        self.containers = [c for c in names if c.startswith(deployments)]

    def logs(self, container: str) -> str:
        found = podman("logs", container, check=False)
        return found.stdout + found.stderr

    def down(self) -> None:
        podman("kube", "down", str(self.file), timeout=300, check=False)
        for name in self.secrets:
            podman("secret", "rm", name, check=False)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.containers")
    commands = parser.add_subparsers(dest="command", required=True)
    built = commands.add_parser("build", help="build an image of the checkout (and the Debian base)")
    built.add_argument("--target", choices=["web", "full"], default="web")
    args = parser.parse_args(argv)
    image = build(args.target)
    print(f"{image.tag}: {image.size / 1e6:.0f} MB; built in {image.built_seconds:.0f} s "
          f"(the base in {image.base_seconds:.0f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
