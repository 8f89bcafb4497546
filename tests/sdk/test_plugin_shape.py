"""One plugin shape (issue 43): every shipped plugin and the example is a thin ``hooks.py`` over
its parts.

- the ``inferx`` entry point of each distribution names ``<package>.hooks``, in its
  pyproject.toml and in what is installed;
- ``hooks.py`` holds only ``@hookimpl`` functions (after its docstring and imports),
  each named after a hook spec, each one ``return`` delegating to the parts.
"""

from __future__ import annotations

import ast
import inspect
import re
from importlib import metadata
from pathlib import Path

import pytest

from inferx_core.sdk import hookspecs

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = sorted(
    [*ROOT.glob("plugins/inferx_*"), ROOT / "examples" / "inferx_example_plugin"]
)
SPECS = {n for n, _ in inspect.getmembers(hookspecs, inspect.isfunction) if n.startswith("inferx_")}


def _declared(dist: Path) -> tuple[str, list[str]]:
    """The distribution's name and its ``[project.entry-points.inferx]`` values."""
    text = (dist / "pyproject.toml").read_text()
    name = re.search(r'^name = "([^"]+)"', text, re.M)
    section = re.search(r"^\[project\.entry-points\.inferx\]\n(.*?)(?:^\[|\Z)", text, re.M | re.S)
    assert name and section, f"{dist}/pyproject.toml: no name or no inferx entry point"
    return name.group(1), re.findall(r'^\S+ = "([^"]+)"', section.group(1), re.M)


def _hooks_file(dist: Path) -> Path:
    return dist / "src" / dist.name / "hooks.py"


def test_the_shape_covers_six_plugins_and_the_example() -> None:
    names = [d.name for d in DISTRIBUTIONS]
    assert len(names) == 7 and "inferx_example_plugin" in names, names


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.name)
def test_the_entry_point_names_the_hooks_module(dist: Path) -> None:
    name, declared = _declared(dist)
    assert declared == [f"{dist.name}.hooks"], declared
    installed = metadata.distribution(name).entry_points
    assert [ep.value for ep in installed if ep.group == "inferx"] == [f"{dist.name}.hooks"], (
        "reinstall the distribution (make install): its installed entry point is stale"
    )


def _is_hookimpl(node: ast.FunctionDef) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id == "hookimpl")
        or (isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "hookimpl")
        for d in node.decorator_list
    )


def _stray(node: ast.stmt, first: bool) -> str | None:
    """Why a top-level statement of hooks.py is not a docstring, an import or a thin hookimpl."""
    if first and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return None  # the module docstring
    if isinstance(node, ast.Import | ast.ImportFrom):
        return None
    if not isinstance(node, ast.FunctionDef) or not _is_hookimpl(node):
        return f"line {node.lineno}: only @hookimpl functions belong in hooks.py"
    if node.name not in SPECS:
        return f"{node.name}: no hook spec has that name"
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # its docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return f"{node.name}: a hookimpl delegates in one return; the work belongs in a part"
    return None


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.name)
def test_hooks_py_holds_only_thin_hookimpls(dist: Path) -> None:
    tree = ast.parse(_hooks_file(dist).read_text())
    strays = [s for i, node in enumerate(tree.body) if (s := _stray(node, i == 0))]
    assert not strays, f"{_hooks_file(dist).relative_to(ROOT)}: {strays}"
    assert any(isinstance(node, ast.FunctionDef) for node in tree.body)


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.name)
def test_no_other_module_implements_a_hook(dist: Path) -> None:
    """The hooks live in hooks.py only, so the entry point registers all of them."""
    others = []
    for path in sorted((dist / "src" / dist.name).glob("*.py")):
        if path.name == "hooks.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and _is_hookimpl(node):
                others.append(f"{path.name}: {node.name}")
    assert not others, others
