"""What the repository holds: no symbolic links. Worktrees link their build folders
(.venv, .cache, harness/target) to the main checkout; one such link committed by a merge made
a clean clone's Maven build write into a link to a folder that does not exist there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tracked_entries() -> list[tuple[str, str]]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    entries = []
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        entries.append((meta.split()[0], path))
    return entries


def test_no_symbolic_link_is_tracked():
    links = [path for mode, path in tracked_entries() if mode == "120000"]
    assert links == []


def test_build_output_is_ignored_whether_folder_or_link():
    for path in (".venv", ".cache", "harness/target"):
        result = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT, check=False)
        assert result.returncode == 0, f"{path} is not ignored"
