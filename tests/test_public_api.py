"""The public SDK surface: plugins and examples import only the public namespaces.

``inferx_core`` is the plugin author's face: exactly the names the table of
docs/writing-a-plugin.md lists (``inferx_core.__all__``, resolved lazily).
``inferx_core.executors`` holds the job helpers an executor plugin submits
with, ``inferx_core.api`` embedding and results in and out (docs/testing.md),
``inferx_core.testing`` test doubles. Every other module may move. The
shipped plugins and the examples are the proof: their package source imports
no other ``inferx_core.<submodule>``, and every name they import exists.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import inferx_core
import inferx_core.api
import inferx_core.executors
from inferx_core import _lazy

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PUBLIC_NAMESPACES = {
    "inferx_core",
    "inferx_core.api",
    "inferx_core.executors",
    "inferx_core.testing",
}
LAZY_MODULES = [inferx_core, inferx_core.api, inferx_core.executors]


def _sources() -> list[Path]:
    plugin_sources = sorted(ROOT.glob("plugins/*/src/**/*.py"))
    examples = [p for p in sorted(ROOT.glob("examples/**/*.py")) if "tests" not in p.parts]
    return plugin_sources + examples


def _inferx_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every inferx_core import, at module level or in a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
    return [f for f in found if f[1].split(".")[0] == "inferx_core"]


def test_the_scan_finds_the_plugins_and_the_examples() -> None:
    names = {p.relative_to(ROOT).parts[1] for p in _sources()}
    assert {"inferx_vllm", "inferx_sglang", "inferx_trtllm", "inferx_rocm"} <= names
    assert {"inferx_example_plugin", "embed_in_pipeline.py"} <= names


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_the_public_namespaces(path: Path) -> None:
    internal = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for line, module, _ in _inferx_imports(path)
        if module not in PUBLIC_NAMESPACES
    ]
    assert not internal, "import these names from inferx_core instead:\n" + "\n".join(internal)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_plugin_imports_is_public(path: Path) -> None:
    missing = [
        f"{path.relative_to(ROOT)}:{line}: {module}.{name}"
        for line, module, names in _inferx_imports(path)
        if module in PUBLIC_NAMESPACES
        for name in names
        if module != "inferx_core.testing" and name not in importlib.import_module(module).__all__
    ]
    assert not missing, "not a public name:\n" + "\n".join(missing)


@pytest.mark.parametrize("module", LAZY_MODULES, ids=lambda m: m.__name__)
def test_every_public_name_resolves(module: ModuleType) -> None:
    assert module.__all__, module.__name__
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("module", LAZY_MODULES, ids=lambda m: m.__name__)
def test_an_unknown_name_is_an_attribute_error(module: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        _ = module.NoSuchThing


def test_the_three_faces_share_only_the_load_profile() -> None:
    """Each audience has its own names; LoadProfile is both a hook argument and
    part of run_bench's configuration."""
    plugin, api, executors = (set(m.__all__) for m in LAZY_MODULES)
    assert plugin & api == {"LoadProfile"}
    assert not plugin & executors
    assert not api & executors


def _table_names(markdown: str, heading: str) -> set[str]:
    """The backticked names of the second column of the table after ``heading``."""
    lines = markdown[markdown.index(heading) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| for | names |"))
    names: set[str] = set()
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        names |= set(re.findall(r"`([\w]+)`", line.split("|")[2]))
    return names


def test_the_plugin_guide_lists_exactly_the_plugin_face() -> None:
    guide = (DOCS / "writing-a-plugin.md").read_text(encoding="utf-8")
    assert _table_names(guide, "## The public SDK") == set(inferx_core.__all__)


def test_the_plugin_guide_lists_exactly_the_executor_helpers() -> None:
    guide = (DOCS / "writing-a-plugin.md").read_text(encoding="utf-8")
    listed = _table_names(guide, "`inferx_core.executors` (`inferx_core.executors.__all__`)")
    assert listed == set(inferx_core.executors.__all__)


def test_the_python_api_docs_name_every_api_name() -> None:
    testing = (DOCS / "testing.md").read_text(encoding="utf-8")
    section = testing[testing.index("## The Python API") :].split("\n## ")[0]
    assert set(inferx_core.api.__all__) <= set(re.findall(r"`(\w+)`", section))


def test_old_module_paths_are_gone() -> None:
    """Nothing resolves the 0.1 paths any more (they were never published)."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("inferx_core.engine_helpers")
    for package, name in (("config", "SweepConfig"), ("results", "read_result")):
        assert not hasattr(importlib.import_module(f"inferx_core.{package}"), name)
    assert not [f for f in sys.meta_path if type(f).__module__.startswith("inferx_core")]


def test_a_public_namespace_declares_each_name_once() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from inferx_core.sdk.fixes import Fix, FixContext\n"
        "    from inferx_core.errors import UserFacingError\n"
    )
    assert _lazy.declared_names(source) == {
        "Fix": "inferx_core.sdk.fixes",
        "FixContext": "inferx_core.sdk.fixes",
        "UserFacingError": "inferx_core.errors",
    }
    for bad in (
        "    from inferx_core.sdk.fixes import Fix\n    from inferx_core.sdk import Fix\n",
        "    from inferx_core.sdk.fixes import Fix as Repair\n",
        "    from .sdk.fixes import Fix\n",
        "    import inferx_core.sdk.fixes\n",
    ):
        with pytest.raises(TypeError):
            _lazy.declared_names("if TYPE_CHECKING:\n" + bad)


def test_importing_the_public_namespaces_stays_cheap() -> None:
    code = (
        "import sys, inferx_core, inferx_core.api, inferx_core.executors\n"
        "heavy = ('pydantic', 'inferx_core.config', 'inferx_core.sdk.manager',"
        " 'inferx_core.telemetry', 'inferx_core.pipeline', 'inferx_core.executors.jobs')\n"
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
