"""DP attention's flags follow the SGLang version that will run (inferx_sglang/versions.py).

The version reaches the plugin as ``platform.software["sglang"]`` (read from the
image for a docker launch). Each range whose parser installs here is checked with
that version's own parser: 0.5.23 (.venv-sglang), 0.5.22 (its wheel in
.venv-sglang/sglang-0.5.22, first on PYTHONPATH) and 0.5.4 (venvs/sglang-0.5.4 in
InferX's cache, for the range before 0.5.22); ``make sglang`` makes all three.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.config.models import Parallelism, ServerConfig
from inferx_core.sdk.platform import Platform
from inferx_sglang import argv_check, launch
from inferx_sglang.versions import DP_ATTENTION_RANGES, dp_attention_argv

ROOT = Path(__file__).resolve().parents[3]
NEW = ["--attn-dp-size", "4"]
PAIR = ["--dp-size", "4", "--enable-dp-attention"]
SERVER = ServerConfig(
    engine="sglang", model="m", port=30000, parallelism=Parallelism(tp=4, dp=4, dp_attention=True)
)


def spec_on(version: str | None) -> Any:
    software = {"sglang": version} if version else {}
    return launch.launch_spec(SERVER, Platform(software=software))


@pytest.mark.parametrize(
    ("version", "flags"),
    [(None, NEW), ("0.5.23", NEW), ("0.5.22", NEW), ("0.5.21", PAIR), ("0.4.6.post5", PAIR)],
)
def test_the_form_follows_the_version_that_runs(version: str | None, flags: list[str]) -> None:
    spec = spec_on(version)
    at = spec.argv.index(flags[0])
    assert list(spec.argv[at : at + len(flags)]) == flags
    assert spec.warnings == ()


@pytest.mark.parametrize("version", ["0.3.6", "nightly"])
def test_a_version_outside_every_range_warns_naming_the_ranges(version: str) -> None:
    spec = spec_on(version)
    (warning,) = spec.warnings
    assert warning.startswith(f"SGLang {version} is outside every known range")
    assert "0.5.22 <= sglang: --attn-dp-size N" in warning
    assert "0.4.0 <= sglang < 0.5.22: --dp-size N --enable-dp-attention" in warning
    assert "--enable-dp-attention" in spec.argv  # the oldest known form, said so


@given(st.tuples(st.integers(0, 1), st.integers(0, 9), st.integers(0, 40)))
def test_every_version_gets_exactly_one_form(version: tuple[int, int, int]) -> None:
    argv, warning = dp_attention_argv(2, ".".join(map(str, version)))
    inside = [
        r for r in DP_ATTENTION_RANGES if r[0] <= version and (r[1] is None or version < r[1])
    ]
    assert len(inside) <= 1
    assert (warning is None) == bool(inside)
    assert argv in (["--attn-dp-size", "2"], ["--dp-size", "2", "--enable-dp-attention"])


def parser(version: str, tmp_path: Path) -> Path:
    """A python whose ``sglang`` is ``version`` (skip, or fail under INFERX_REQUIRE_ENGINE=1)."""
    python = ROOT / ".venv-sglang" / "bin" / "python"
    old = ROOT / ".venv-sglang" / f"sglang-{version}"
    if not python.is_file() or (version != launch.TARGET_VERSION and not old.is_dir()):
        why = f"no SGLang {version} parser: run `make sglang`"
        if os.environ.get("INFERX_REQUIRE_ENGINE") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    if version == launch.TARGET_VERSION:
        return python
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{old}" exec "{python}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.slow
@pytest.mark.parametrize("version", [launch.TARGET_VERSION, "0.5.22"])
def test_each_checked_range_s_argv_is_what_its_own_parser_takes(
    version: str, tmp_path: Path
) -> None:
    spec = spec_on(version)
    answer = argv_check.probe(
        parser(version, tmp_path),
        {"chosen": argv_check.engine_args_of(spec.argv), "pair": ["--model-path", "m", *PAIR]},
    )
    assert answer["version"] == version
    assert argv_check.verdict(answer["results"]["chosen"]) is None  # accepted, undeprecated
    assert "deprecated" in (argv_check.verdict(answer["results"]["pair"]) or "")


# An SGLang older than 0.5.22 (0.5.4, the range of --dp-size N --enable-dp-attention)
# has its own venv (`make sglang` puts it in InferX's cache, venvs/sglang-0.5.4, and
# `make test` names its python in INFERX_SGLANG_LEGACY_PYTHON: its server_args imports
# torchvision, which needs its own torch). Building its ServerArgs resolves them against a GPU ("No
# accelerator (CUDA, XPU, HPU) is available"), so its argparse parser is what is asked.
LEGACY = "0.5.4"
LEGACY_PROBE = r"""
import argparse, contextlib, io, json, sys
from importlib.metadata import version
from sglang.srt.server_args import ServerArgs

parser = argparse.ArgumentParser(exit_on_error=False)
ServerArgs.add_cli_args(parser)
answer = {"version": version("sglang"), "results": {}}
for name, argv in json.loads(sys.argv[1]).items():
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            ns = parser.parse_args(argv)
        answer["results"][name] = {"error": None, "namespace": vars(ns)}
    except (SystemExit, argparse.ArgumentError) as exc:
        lines = stderr.getvalue().strip().splitlines()
        answer["results"][name] = {"error": lines[-1] if lines else str(exc), "namespace": None}
print(json.dumps(answer, default=str))
"""


def legacy_python() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "inferx"
    default = cache / "venvs" / f"sglang-{LEGACY}" / "bin" / "python"
    python = Path(os.environ.get("INFERX_SGLANG_LEGACY_PYTHON") or default)
    if not python.is_file():
        why = f"no SGLang {LEGACY} parser: run `make sglang`"
        if os.environ.get("INFERX_REQUIRE_ENGINE") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return python


@pytest.mark.slow
def test_the_range_before_0_5_22_is_what_0_5_4_s_own_parser_takes() -> None:
    spec = spec_on(LEGACY)
    argvs = {
        "chosen": argv_check.engine_args_of(spec.argv),
        "new": ["--model-path", "m", *NEW],
    }
    proc = subprocess.run(
        [str(legacy_python()), "-c", LEGACY_PROBE, json.dumps(argvs)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["version"] == LEGACY
    chosen = answer["results"]["chosen"]
    assert chosen["error"] is None
    namespace = chosen["namespace"]  # argparse's dests (ServerArgs.from_cli_args renames them)
    assert namespace["data_parallel_size"] == 4 and namespace["enable_dp_attention"] is True
    assert namespace["tensor_parallel_size"] == 4
    # the newer form is not this release's: its own parser refuses it
    assert "unrecognized arguments: --attn-dp-size 4" in answer["results"]["new"]["error"]
