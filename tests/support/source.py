"""`ast.parse` for the tests that read the source, safe from a CPython 3.11 bug.

Python 3.11.7 keeps the AST conversion's recursion depth in interpreter-wide state
(gh-106905). If a garbage collection during a parse runs a finalizer that parses too (a
py4j object of an earlier Spark test logs "Exception while sending command." with its
traceback, and 3.11's traceback formatting calls `ast.parse` for its carets), the outer
parse fails with "SystemError: AST constructor recursion depth mismatch". CI saw exactly
that in tests/test_structure.py. No collection during a parse, no nested parse."""

from __future__ import annotations

import ast
import gc


def parse(source: str) -> ast.Module:
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()
