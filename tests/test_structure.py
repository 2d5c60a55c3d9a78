"""The structure the design asks for, read from the source: the change workflow knows no kind
by name, and no feature's models import consumers/models.py (which imports every feature's
models: a circle), nor each other (string references instead)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import consumers
from tests.support.source import parse

PACKAGE = Path(consumers.__file__).parent


def imports(path: Path) -> set[str]:
    """Every module a file imports, relative ones as written (e.g. "..models", ".kinds")."""
    found = set()
    for node in ast.walk(parse(path.read_text())):
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


# Identity is one package that features call through its public module (consumers/identity/
# __init__.py): no module outside it names one of its modules, except where Django needs the
# module itself: the models it finds through consumers/models.py, the admin pages
# consumers/admin.py registers, and the migrations (history, never edited). tests/identity/
# tests the package's own modules. Dotted paths in settings are strings, not imports.
CHECKOUT = PACKAGE.parent
IDENTITY = "consumers.identity"
IDENTITY_MODULES_ALLOWED = {
    "consumers/models.py": {"consumers.identity.models", "consumers.identity.tokens.models"},
    "consumers/admin.py": {"consumers.identity.admin"},
}
OUTSIDE_IDENTITY = ("consumers", "dashboard", "devstack", "bench", "scripts", "tests")
NOT_FEATURES = ("consumers/identity/", "consumers/migrations/", "tests/identity/")
# the identity modules that once sat loose at the app's root, and where their names may still be read
OLD_ROOT_MODULES = ("roles", "users", "lockout", "access", "tokens")
OLD_PATH = re.compile(r"consumers[./](?:{})\b".format("|".join(OLD_ROOT_MODULES)))
TEXTS = ("README.md", "docs/*.md", "scripts/*.sh", "pyproject.toml", ".env.example", "deploy/**/*")


def identity_modules_imported(source: str, package: list[str]) -> set[str]:
    """The modules of consumers/identity (not its public module itself) that a module of
    `package` (e.g. ["consumers", "dlq"]) imports, as absolute dotted names: `from
    ..identity.grants import x`, `import consumers.identity.scope` and `from consumers.identity
    import views` (a module, not a public name) alike."""
    from consumers import identity

    found = set()
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(IDENTITY + "."))
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module.startswith(IDENTITY + "."):
                found.add(module)
            elif module == IDENTITY:
                found.update(f"{IDENTITY}.{a.name}" for a in node.names if a.name not in identity.__all__)
    return found


def _features() -> list[Path]:
    files = [CHECKOUT / "manage.py"]
    for top in OUTSIDE_IDENTITY:
        files += sorted((CHECKOUT / top).rglob("*.py"))
    return [f for f in files if not str(f.relative_to(CHECKOUT)).startswith(NOT_FEATURES)]


def test_features_reach_identity_through_its_public_module_only():
    reaching = {}
    for path in _features():
        name = str(path.relative_to(CHECKOUT))
        package = list(path.relative_to(CHECKOUT).parts[:-1])
        internal = identity_modules_imported(path.read_text(), package) - IDENTITY_MODULES_ALLOWED.get(name, set())
        if internal:
            reaching[name] = sorted(internal)
    assert reaching == {}


def test_the_check_finds_identity_modules_imported_however_written():
    source = (
        "from ..identity import scope_of, views\nfrom ..identity.grants import within\n"
        "from .. import identity\nimport consumers.identity.roles\nfrom consumers.identity.tokens import models\n"
        "from consumers.identity import VIEW, api_view\n"
    )
    assert identity_modules_imported(source, ["consumers", "dlq"]) == {
        "consumers.identity.views",
        "consumers.identity.grants",
        "consumers.identity.roles",
        "consumers.identity.tokens",
    }


def test_no_identity_module_is_left_loose_at_the_apps_root():
    # a package by its modules: a folder left with only __pycache__ after a checkout is not one
    loose = [
        name for name in OLD_ROOT_MODULES if (PACKAGE / f"{name}.py").exists() or any((PACKAGE / name).glob("*.py"))
    ]
    assert loose == []
    sources = [p for top in OUTSIDE_IDENTITY for p in (CHECKOUT / top).rglob("*.py")]
    texts = [p for pattern in TEXTS for p in CHECKOUT.glob(pattern) if p.is_file()]
    named = {}
    for path in sorted(set(sources + texts)):
        if "migrations" in path.parts:
            continue
        found = OLD_PATH.findall(path.read_text())
        if found:
            named[str(path.relative_to(CHECKOUT))] = sorted(set(found))
    assert named == {}
