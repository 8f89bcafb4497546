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


# -- the caps are met by structure, not by packing lines (issue 31) -------------------

_FORMAT_OFF = ("# fmt: skip", "# fmt: off")


def _is_data_table(node: ast.stmt) -> bool:
    """A module-level constant bound to a literal collection: a table ruff may keep as laid."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target, value = node.target, node.value
    else:
        return False
    if not isinstance(target, ast.Name) or target.id.lstrip("_") != target.id.lstrip("_").upper():
        return False
    if isinstance(value, ast.Call) and value.args:  # frozenset({...}), tuple([...])
        value = value.args[0]
    return isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set))


def _packed_lines() -> list[str]:
    found: list[str] = []
    for path in _source_files():
        text = path.read_text(encoding="utf-8")
        if not any(marker in text for marker in _FORMAT_OFF):
            continue
        tree = ast.parse(text)
        tables = {
            line
            for node in tree.body
            if _is_data_table(node)
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
        }
        for number, line in enumerate(text.splitlines(), start=1):
            if any(marker in line for marker in _FORMAT_OFF) and number not in tables:
                found.append(f"{path.relative_to(ROOT).as_posix()}:{number}: {line.strip()}")
    return found


def test_no_format_skip_outside_literal_data_tables() -> None:
    packed = _packed_lines()
    assert not packed, (
        "'# fmt: skip' packs code past the formatter (meet the size caps by structure; only "
        "a module-level constant holding a literal table may keep its layout):\n"
        + "\n".join(packed)
    )


def test_the_format_check_tells_a_table_from_code() -> None:
    table = ast.parse("COLUMNS = (\n  'a', 'b',\n)  # fmt: skip\n").body[0]
    packed_call = ast.parse("x = run(a,\n  b)  # fmt: skip\n").body[0]
    lower_dict = ast.parse("mapping = {1: 2}  # fmt: skip\n").body[0]
    assert _is_data_table(table)
    assert not _is_data_table(packed_call) and not _is_data_table(lower_dict)
