"""Small pieces: no function longer than 60 lines, no module longer than 500.

Issue 12 asks that every function in the core and the shipped plugins fits on
a screen and every module has one job. This walks the source with ``ast``
(so it counts what Python sees, docstrings included, decorators excluded) and
fails with the full list of offenders, not just the first.

Something that truly must stay long goes into ``ALLOWED`` with the reason
written beside it; nothing is exempted any other way.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_ROOTS = [ROOT / "src" / "inferx_core", *sorted((ROOT / "plugins").glob("*/src"))]

MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500

# "path relative to the repo root" or "path::qualified.function" -> why it stays long.
ALLOWED: dict[str, str] = {}


def _source_files() -> list[Path]:
    files: list[Path] = []
    for root in SOURCE_ROOTS:
        files.extend(sorted(root.rglob("*.py")))
    return files


def _functions(tree: ast.AST, prefix: str = ""):
    """Yield (qualified name, node) for every function, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def _function_length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    # lineno is the ``def`` line (decorators sit above it and do not count).
    return node.end_lineno - node.lineno + 1


def _offenders() -> tuple[list[str], list[str]]:
    long_functions: list[str] = []
    long_modules: list[str] = []
    for path in _source_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        module_lines = len(text.splitlines())
        if module_lines > MAX_MODULE_LINES and rel not in ALLOWED:
            long_modules.append(f"{rel}: {module_lines} lines")
        tree = ast.parse(text, filename=rel)
        for name, node in _functions(tree):
            length = _function_length(node)
            key = f"{rel}::{name}"
            if length > MAX_FUNCTION_LINES and key not in ALLOWED:
                long_functions.append(f"{key} (line {node.lineno}): {length} lines")
    return long_functions, long_modules


def test_source_roots_exist():
    assert (ROOT / "src" / "inferx_core").is_dir()
    assert len(SOURCE_ROOTS) > 1, "expected the shipped plugins under plugins/*/src"


def test_no_function_over_the_limit():
    long_functions, _ = _offenders()
    assert not long_functions, (
        f"functions longer than {MAX_FUNCTION_LINES} lines (split them into named steps):\n  "
        + "\n  ".join(long_functions)
    )


def test_no_module_over_the_limit():
    _, long_modules = _offenders()
    assert not long_modules, (
        f"modules longer than {MAX_MODULE_LINES} lines (split them by job):\n  "
        + "\n  ".join(long_modules)
    )


def test_allowlist_entries_are_real_and_explained():
    """An allowlist entry names something that exists and still needs it."""
    existing = {path.relative_to(ROOT).as_posix() for path in _source_files()}
    for key, reason in ALLOWED.items():
        assert reason.strip(), f"{key}: an allowlist entry needs a written reason"
        assert key.split("::")[0] in existing, f"{key}: no such file"
