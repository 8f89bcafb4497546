"""DP attention's flags follow the SGLang version that will run (inferx_sglang/versions.py).

The version reaches the plugin as ``platform.software["sglang"]`` (read from the
image for a docker launch). Each range whose parser installs here is checked with
that version's own parser: 0.5.23 (.venv-sglang) and 0.5.22 (its wheel in
.venv-sglang/sglang-0.5.22, first on PYTHONPATH; ``make sglang`` makes both).
"""

from __future__ import annotations

import os
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
