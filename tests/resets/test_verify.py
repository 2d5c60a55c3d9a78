"""Verification watches the whole window (scripted reads of the committed offsets, no broker):
a queue that a client set back for a moment is named even when it holds the target at the end."""

from __future__ import annotations

from types import SimpleNamespace

from consumers.resets import execute

ROWS = [{"label": f"T@b#{q}", "topic": "T", "broker": "b", "queue_id": q, "max": 100} for q in (0, 1)]


def test_a_queue_set_back_for_a_moment_is_named_and_the_watch_lasts_the_window(settings, monkeypatch):
    settings.RESET_VERIFY_SECONDS = 3
    reads = iter([
        {"T@b#0": 10, "T@b#1": 10},  # both at the target
        {"T@b#0": 50, "T@b#1": 10},  # a client committed its old position on queue 0 ...
        {"T@b#0": 10, "T@b#1": 10},  # ... and the next commit puts it back
    ])  # fmt: skip
    last = {}

    def scripted(cluster, fn, **kwargs):
        last.update(next(reads, last))
        return dict(last)

    monkeypatch.setattr(execute, "run_on_cluster", scripted)
    result = {"applied": {"T@b#0": 10, "T@b#1": 10}, "replaced": {"T@b#0": 50, "T@b#1": 50}, "online": False}
    request = SimpleNamespace(cluster=None, group="G")
    checks = execute._verify(request, ROWS, {"T@b#0": 10, "T@b#1": 10}, result)
    assert all(c["ok"] for c in checks.values())  # both hold the target at the end ...
    [back] = checks["T@b#0"]["went_back"]  # ... but queue 0 was set back once, at the second read
    assert back["committed"] == 50 and back["after_seconds"] >= 0.9 and "overwritten" in back["by"]
    assert "went back to 50" in checks["T@b#0"]["note"] and "went_back" not in checks["T@b#1"]
    assert result["watched_seconds"] >= 3
