"""Which package may import which (docs/layout.md), read from the import graph of the source.

The floors, from the bottom: the RocketMQ client (nothing of the console, nor Django); the
plumbing every feature leans on (the claimed jobs, the HTTP edge, the audit log), identity, the
reader's language and the one way to reach a cluster; the change workflow, which knows no kind
by name (kinds register with it); the features, which may use all of these and each other; and
Django's fixed places at the top (urls, apps, admin, context processors, template tags,
management commands), which nothing imports. `consumers/models.py` is Django's registry of
every package's models: any module may import it. Nothing of the console imports the dev stack."""

from __future__ import annotations

import pytest

from tests.test_structure import CHECKOUT, GRAPHED, import_graph, module_of

# a shared package -> the packages of consumers/ it may import (besides itself and models.py)
SHARED = {
    "rocketmq": set(),
    "apiclient": set(),  # a client of the console's HTTP API: it may run where the console is not
    "jobs": set(),
    "audit": set(),
    "web": {"jobs", "identity"},
    "identity": {"jobs", "web", "audit", "rocketmq"},
    "languages": {"web", "identity"},
    "clusters": {"rocketmq"},
    "changes": {"jobs", "web", "audit", "identity", "languages", "rocketmq", "clusters"},
}
# Django's fixed places: the root modules other than models.py, and these packages
TOP_PACKAGES = {"templatetags", "management", "migrations"}


def room(module: str) -> str:
    """The package of consumers/ a module belongs to ("dlq"), "root:<name>" for a module at the
    app's root, or the top-level directory ("dashboard", "devstack")."""
    parts = module.split(".")
    if parts[0] != "consumers" or len(parts) == 1:
        return parts[0]
    return parts[1] if (CHECKOUT / "consumers" / parts[1]).is_dir() else f"root:{parts[1]}"


def breaches(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, imported in sorted(graph.items()):
        here = room(module)
        for target in sorted(imported):
            there = room(target)
            if there == here or there == "root:models":
                continue
            if there == "devstack" and here != "devstack":
                found.append(f"{module} -> {target} (the app never imports the dev stack)")
            elif here == "rocketmq" or (here in SHARED and there not in SHARED[here]):
                found.append(f"{module} -> {target} ({here} may import {sorted(SHARED[here]) or 'nothing'})")
            elif here not in ("dashboard", "devstack") and (there.startswith("root:") or there in TOP_PACKAGES):
                found.append(f"{module} -> {target} (Django's fixed places are imported by nothing)")
            elif there == "dashboard" and here != "devstack":
                found.append(f"{module} -> {target} (the app is imported by the project, not the other way)")
    return found


def sources() -> dict[str, tuple[str, bool]]:
    return {
        module_of(path): (path.read_text(), path.name == "__init__.py")
        for top in GRAPHED
        for path in sorted((CHECKOUT / top).rglob("*.py"))
        if "migrations" not in path.parts
    }


def test_each_package_imports_only_what_its_floor_may():
    assert breaches(import_graph(sources())) == []


@pytest.mark.parametrize("package", ["rocketmq", "apiclient"])
def test_the_clients_import_no_django(package):
    client = {module: source for module, (source, _) in sources().items() if room(module) == package}
    using = sorted(m for m, source in client.items() if "import django" in source or "from django" in source)
    assert client and using == []


@pytest.mark.parametrize(
    ("module", "source", "breach"),
    [
        ("consumers.jobs.claims", "from ..dlq.models import RedriveJob\n", "consumers.jobs.claims -> consumers.dlq"),
        ("consumers.changes.workflow", "def f():\n    from ..resets import kind\n", "-> consumers.resets"),
        ("consumers.dlq.views", "from .. import urls\n", "consumers.dlq.views -> consumers.urls"),
        ("consumers.live.poll", "from devstack import rocketmq\n", "the app never imports the dev stack"),
        ("consumers.rocketmq.client", "from ..identity import VIEW\n", "rocketmq may import nothing"),
        ("consumers.live.tasks", "from dashboard.celery import app\n", "not the other way"),
    ],
)
def test_the_rule_finds_a_breach_however_written(module, source, breach):
    tree = sources()
    tree[module] = (source, False)
    found = [b for b in breaches(import_graph(tree)) if b.startswith(module)]
    assert any(breach in b for b in found), found


def test_the_features_may_use_the_floors_below_and_each_other():
    tree = sources()
    source = "from ..messages import services\nfrom ..jobs import claims\nfrom .. import models\n"
    tree["consumers.dlq.views"] = (source, False)
    assert [b for b in breaches(import_graph(tree)) if b.startswith("consumers.dlq.views")] == []
