"""The console as a site installs it: the wheel built from this checkout, installed into a fresh
virtualenv outside it.

Installing the dependencies from the package index would take minutes (pyspark alone is
300 MB), so the new virtualenv sees this one's site-packages through a .pth file, after its own:
the dependencies come from there, the console itself only from the wheel (`pip install
--no-deps`). Nothing is fetched: the build uses this virtualenv's setuptools, the install
--no-index.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# What a clean clone would not have (or what is big and not the package's): left out of the
# copy the wheel is built from, so the build writes its build/ and *.egg-info/ there, not here.
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", ".cache", "__pycache__", "var", "staticfiles", "build", "dist", "*.egg-info", "target",
    "node_modules", ".pytest_cache", ".ruff_cache", ".hypothesis", "out",
)  # fmt: skip
QUIET = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path

    @property
    def command(self) -> Path:
        return self.venv / "bin" / "rocketmq-console"


def _run(args: list, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def build_wheel(checkout: Path, base: Path) -> Path:
    """`pip wheel` of a copy of the checkout; the wheel's path."""
    source, out = base / "source", base / "dist"
    shutil.copytree(checkout, source, ignore=NOT_SOURCES, symlinks=True)
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(base), **QUIET}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--wheel-dir", out, source],
         env=environment, cwd=base)  # fmt: skip
    (wheel,) = out.glob("rocketmq_console-*.whl")
    return wheel


def install(wheel: Path, venv: Path) -> Installed:
    """A fresh virtualenv at `venv` with the wheel installed and this one's packages visible."""
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(venv.parent), **QUIET}
    _run([sys.executable, "-m", "venv", "--without-pip", venv], env=environment)
    python = venv / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site_packages = Path(_run([python, "-c", purelib], env=environment).stdout.strip())
    (site_packages / "checkout-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], env=environment, cwd=venv.parent)
    return Installed(wheel, venv, site_packages)
