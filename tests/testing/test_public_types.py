"""A plugin author's type checker sees InferX's types (issue 43 item 4).

The example plugin (written against the public face only) and a small third-party
module that uses ``inferx_core``, ``inferx_core.api`` and ``inferx_core.testing`` are
checked with ``mypy --strict`` under an empty config, as a plugin's own CI would run it:
no error, and a deliberate mistake IS reported (the names are typed, not ``Any``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "inferx_example_plugin" / "src" / "inferx_example_plugin"

THIRD_PARTY = """
from __future__ import annotations

from inferx_core import LaunchSpec, ReadinessProbe, ServerConfig, hookimpl
from inferx_core.api import BenchConfig, run_bench
from inferx_core.testing import ServerProcess


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe]:
    return [ReadinessProbe(name="health", path="/health", timeout_s=spec.port / 1000)]


def measure(url: str) -> int:
    return len(run_bench(BenchConfig(base_url=url)))


def served() -> str:
    with ServerProcess() as server:
        return server.base_url
"""

MISTAKE = "\nwrong: int = ServerProcess\n"


def _mypy_strict(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is in the dev group (make install)")
    config = tmp_path / "plugin-author.ini"
    config.write_text("[mypy]\n")  # not InferX's own [tool.mypy]: the author's
    cmd = [sys.executable, "-m", "mypy", "--strict", "--config-file", str(config)]
    cmd += ["--cache-dir", str(tmp_path / "cache"), *map(str, files)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600)


def test_a_plugin_on_the_public_face_passes_mypy_strict_and_its_mistakes_show(
    tmp_path: Path,
) -> None:
    good = tmp_path / "third_party_plugin.py"
    good.write_text(THIRD_PARTY)
    bad = tmp_path / "third_party_mistake.py"
    bad.write_text(THIRD_PARTY + MISTAKE)
    run = _mypy_strict(tmp_path, EXAMPLE / "__init__.py", good, bad)
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, run.stdout + run.stderr
    assert "third_party_mistake.py" in errors[0]
    assert 'type "type[ServerProcess]", variable has type "int"' in errors[0]
