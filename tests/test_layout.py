"""tests/ mirrors src/inferx_core/ (issue 31): a module's tests sit in its package's folder.

A folder of tests is named after a package (``tests/load/transport`` for
``inferx_core/load/transport``) or a module of the package above it
(``tests/executors/slurm`` for ``executors/slurm.py``). The few folders that
are not code are named here with why; so are the tests at the top, which check
the project as a whole rather than one package.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src" / "inferx_core"

#: Folders of tests that are not one package's, and why.
LANES = {
    "e2e": "real engines end to end: every package at once",
}
#: Folders of data, not tests.
DATA = {"platforms", "data"}
#: Tests of the project as a whole (or of a top-level module), kept at the top.
TOP_LEVEL = {
    "test_code_size.py": "size caps of every package",
    "test_errors.py": "inferx_core/errors.py",
    "test_examples.py": "examples/",
    "test_layers.py": "the import contracts of every package",
    "test_layout.py": "this layout",
    "test_no_checkout_paths.py": "the installed distribution",
    "test_packaging.py": "the wheels",
    "test_public_api.py": "the public namespaces (__init__.py, api.py, executors)",
}


def _test_folders() -> list[Path]:
    return sorted({p.parent for p in TESTS.rglob("test_*.py")} - {TESTS})


def _mirrors_code(folder: Path) -> bool:
    rel = folder.relative_to(TESTS)
    if rel.parts[0] in LANES:
        return True
    target = SRC.joinpath(*rel.parts)
    return (target / "__init__.py").is_file() or target.with_suffix(".py").is_file()


def test_every_test_folder_is_named_after_a_package_or_module() -> None:
    strays = [
        str(f.relative_to(TESTS))
        for f in _test_folders()
        if not _mirrors_code(f) and f.name not in DATA
    ]
    assert not strays, f"test folders that name no package or module of inferx_core: {strays}"


def test_only_project_wide_tests_sit_at_the_top() -> None:
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    extra = [name for name in top if name not in TOP_LEVEL]
    assert not extra, (
        f"{extra}: put a package's tests in tests/<package>/ (named after the module tested)"
    )


def test_the_check_tells_a_mirror_from_a_stray() -> None:
    assert _mirrors_code(TESTS / "load" / "transport")  # a package
    assert _mirrors_code(TESTS / "executors" / "slurm")  # a module of the package above
    assert not _mirrors_code(TESTS / "search")  # a topic, not code
