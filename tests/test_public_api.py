"""The public SDK surface: plugins and examples import only ``inferx_core`` itself.

Everything a plugin author needs is importable from the top-level namespace
(``inferx_core.__all__``, resolved lazily); the modules behind it may move.
The shipped plugins and the examples are the proof: their package source
imports no ``inferx_core.<submodule>``. The one other public namespace is
``inferx_core.testing`` (test doubles: a scripted OpenAI-compatible server).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import inferx_core

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_NAMESPACES = {"inferx_core", "inferx_core.testing"}


def _sources() -> list[Path]:
    plugin_sources = sorted(ROOT.glob("plugins/*/src/**/*.py"))
    examples = [p for p in sorted(ROOT.glob("examples/**/*.py")) if "tests" not in p.parts]
    return plugin_sources + examples


def _inferx_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every inferx_core import, at module level or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        found += [(node.lineno, m) for m in modules if m.split(".")[0] == "inferx_core"]
    return found


def test_the_scan_finds_the_plugins_and_the_examples() -> None:
    names = {p.relative_to(ROOT).parts[1] for p in _sources()}
    assert {"inferx_vllm", "inferx_sglang", "inferx_trtllm", "inferx_rocm"} <= names
    assert {"inferx_example_plugin", "embed_in_pipeline.py"} <= names


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_the_public_namespace(path: Path) -> None:
    internal = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for line, module in _inferx_imports(path)
        if module not in PUBLIC_NAMESPACES
    ]
    assert not internal, "import these names from inferx_core instead:\n" + "\n".join(internal)


def test_every_public_name_resolves() -> None:
    assert len(set(inferx_core.__all__)) == len(inferx_core.__all__)
    for name in inferx_core.__all__:
        assert getattr(inferx_core, name) is not None, name
    assert set(inferx_core.__all__) <= set(dir(inferx_core))


def test_the_lazy_table_and_all_agree() -> None:
    eager = {"PROJECT_NAME", "__version__", "hookimpl", "hookspec"}
    assert set(inferx_core.__all__) == eager | set(inferx_core._LAZY_EXPORTS)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        _ = inferx_core.NoSuchThing  # type: ignore[attr-defined]


def test_importing_the_namespace_stays_cheap() -> None:
    code = (
        "import sys, inferx_core\n"
        "heavy = ('pydantic', 'inferx_core.config', 'inferx_core.sdk.manager',"
        " 'inferx_core.telemetry')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "package",
    [
        ROOT / "src" / "inferx_core",
        *sorted(p for p in ROOT.glob("plugins/*/src/*") if p.is_dir()),
        ROOT / "examples" / "inferx_example_plugin" / "src" / "inferx_example_plugin",
    ],
    ids=lambda p: p.name,
)
def test_every_package_ships_py_typed(package: Path) -> None:
    assert (package / "__init__.py").is_file(), package
    assert (package / "py.typed").is_file(), f"{package} has no py.typed marker"
