"""Public namespaces whose names are imported on first use.

A public module (``inferx_core``, ``inferx_core.api``,
``inferx_core.executors``) declares each of its names once, as an ordinary
``from MODULE import NAME as NAME`` under ``if TYPE_CHECKING:`` (the ``as NAME``
marks it exported to a strict type checker, as a plugin author's mypy runs). Type checkers, IDEs
and import-linter read those imports as written; at run time :func:`attach`
reads the same statements from the module's source and gives the module its
``__all__``, ``__getattr__`` and ``__dir__``, so nothing behind a name is
imported until the name is used (``import inferx_core`` stays cheap: the CLI's
``--version`` answers without pydantic, engines or vendor libraries).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def declared_names(source: str) -> dict[str, str]:
    """name -> module, from the ``from MODULE import NAME`` lines of the
    module-level ``if TYPE_CHECKING:`` blocks of ``source``."""
    table: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for statement in node.body:
            if not (isinstance(statement, ast.ImportFrom) and statement.module):
                raise TypeError("a public namespace declares names with `from MODULE import NAME`")
            if statement.level:
                raise TypeError(f"use the absolute module path, not {statement.module!r}")
            for alias in statement.names:
                # ``NAME as NAME`` is the explicit re-export a strict type checker
                # (mypy's no_implicit_reexport) needs to see a public name as exported.
                if alias.asname not in (None, alias.name) or alias.name in table:
                    raise TypeError(f"declare {alias.name!r} once, under its own name")
                table[alias.name] = statement.module
    return table


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def attach(
    namespace: dict[str, Any],
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__, __getattr__, __dir__`` for the module whose ``globals()`` is
    ``namespace``: every name its ``if TYPE_CHECKING:`` block imports, resolved
    (and kept in the module) on first access."""
    module_name = namespace["__name__"]
    table = declared_names(Path(namespace["__file__"]).read_text(encoding="utf-8"))

    def __getattr__(name: str) -> Any:
        source = table.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return sorted(table), __getattr__, __dir__
