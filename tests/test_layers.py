"""The core's import layers and cycles (pyproject.toml [tool.importlinter]) hold.

``make lint`` runs the same check; here it also runs under ``make test``.
Function-local and TYPE_CHECKING imports count (import-linter's default).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ERRORS_PY = ROOT / "src" / "inferx_core" / "errors.py"


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _imported_modules(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):  # every import, at module level or inside a function
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return names


def test_errors_is_a_leaf() -> None:
    imported = _imported_modules(ast.parse(ERRORS_PY.read_text(encoding="utf-8")))
    core = [n for n in imported if n.startswith((".", "inferx_core"))]
    assert core == [], f"errors.py must import nothing from inferx_core, imports {core}"
