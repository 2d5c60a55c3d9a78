"""The structure the design asks for, read from the source: the change workflow knows no kind
by name, and no feature's models import consumers/models.py (which imports every feature's
models: a circle), nor each other (string references instead)."""

from __future__ import annotations

import ast
from pathlib import Path

import consumers

PACKAGE = Path(consumers.__file__).parent


def imports(path: Path) -> set[str]:
    """Every module a file imports, relative ones as written (e.g. "..models", ".kinds")."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_feature_models_module_imports_another_models_module():
    circles = {}
    for path in sorted(PACKAGE.glob("*/models.py")):
        models_imports = {m for m in imports(path) if m.endswith("models") and m.startswith((".", "consumers"))}
        if models_imports:
            circles[str(path.relative_to(PACKAGE))] = sorted(models_imports)
    assert circles == {}


def test_the_change_workflow_knows_no_kind_by_name():
    named = {}
    for path in sorted((PACKAGE / "changes").glob("*.py")):
        bad = {m for m in imports(path) if m.lstrip(".").split(".")[0] in ("resets", "dlq")}
        source = path.read_text()
        if bad or 'kind == "' in source or "Kind.RESET" in source or "Kind.REDRIVE" in source:
            named[path.name] = sorted(bad)
    assert named == {}
