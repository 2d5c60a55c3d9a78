"""consumers/identity/__init__.py, the one module features import identity from: every public
name it lists is found where it says, none hides a module of the package, and importing it
imports nothing else (consumers/models.py imports the package's models while Django loads its
apps: an import of models, or of anything that imports consumers.models, would be a circle)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

from django.conf import settings

from consumers import identity


def test_every_public_name_is_listed_and_found_where_the_module_says():
    assert sorted(identity.__all__) == sorted(identity._WHERE)
    assert len(set(identity.__all__)) == len(identity.__all__)
    for name in identity.__all__:
        module, _, defined_as = identity._WHERE[name].partition(":")
        defined_in = importlib.import_module(f"consumers.identity.{module}")
        assert getattr(identity, name) is getattr(defined_in, defined_as or name)


def test_no_public_name_hides_a_module_of_the_package():
    modules = {info.name for info in pkgutil.iter_modules(identity.__path__)}
    assert {"roles", "access", "grants", "tokens", "views"} <= modules
    assert modules.isdisjoint(identity.__all__)


def test_a_name_that_is_not_public_is_an_attribute_error():
    try:
        identity.not_a_public_name  # noqa: B018
    except AttributeError as exc:
        assert "not_a_public_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")
    assert not hasattr(identity, "_hidden")


def test_importing_the_public_module_imports_nothing_of_the_package_or_of_django():
    script = (
        "import sys, consumers.identity as identity; "
        "print(sorted(m for m in sys.modules if m.startswith(('consumers.', 'django'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], cwd=settings.BASE_DIR, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "['consumers.identity']"
