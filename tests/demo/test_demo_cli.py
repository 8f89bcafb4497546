"""``inferx demo`` with two engines: the same sweep on each, each into OUTPUT/ENGINE (the
folders ``inferx compare OUTPUT/vllm OUTPUT/llamacpp`` puts side by side), without engines.

The runs themselves are ``inferx run``'s (tests/e2e/test_demo_two_engines_e2e.py runs
them on the real engines); here ``execute`` is recorded, not run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pytest

from inferx_core.cli.demo import register_demo
from inferx_core.demo import run as demo_run


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register_demo(parser.add_subparsers(), lambda *a: 0)
    return parser.parse_args(["demo", *argv])


@pytest.fixture
def no_engines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    model = tmp_path / "tiny-llama"
    model.mkdir()
    monkeypatch.setattr(demo_run, "build_tiny_model", lambda out: model)
    monkeypatch.setattr(demo_run, "find_engine_python", lambda given: Path(sys.executable))
    return model


def run_demo(*argv: str) -> tuple[int, list[Any], argparse.Namespace]:
    from inferx_core.cli.demo import cmd_demo

    calls: list[tuple[list[Any], argparse.Namespace]] = []

    def execute(configs: list[Any], args: argparse.Namespace, pm: Any, platform: Any) -> int:
        calls.append((configs, args))
        return 0

    code = cmd_demo(parse(*argv), execute)
    assert len(calls) == 1, "one run of every engine's config"
    return code, calls[0][0], calls[0][1]


def test_both_engines_run_the_same_sweep_into_their_own_folders(
    no_engines: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    code, configs, args = run_demo(
        "--output", str(out), "--engines", "vllm,llamacpp", "--concurrency", "1,2",
        "--isl", "32", "--osl", "16", "--num-prompts", "8",
    )  # fmt: skip
    assert code == 0
    assert [c.engine for c in configs] == ["vllm", "llamacpp"]
    # each engine into OUTPUT/ENGINE: `inferx compare OUTPUT/vllm OUTPUT/llamacpp`
    assert [c.output_dir for c in configs] == [out / "vllm", out / "llamacpp"]
    assert args.output is None  # the per-engine folders are not overridden
    for config in configs:
        assert config.model == str(no_engines)
        assert config.load.concurrency == [1, 2] and config.load.num_prompts == 8
        assert (config.workload.isl, config.workload.osl) == (32, 16)
    vllm, llamacpp = configs
    assert vllm.executable and vllm.executable[0] == sys.executable  # the engine venv's python
    assert not llamacpp.executable  # the plugin finds llama-server itself
    assert len({c.name for c in configs}) == 2  # told apart in the report


def test_an_engine_whose_plugin_is_missing_is_left_out_with_a_note(
    no_engines: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, configs, _ = run_demo("--output", str(tmp_path), "--engines", "llamacpp,no-such-engine")
    assert [c.engine for c in configs] == ["llamacpp"]
    assert "'no-such-engine' left out" in capsys.readouterr().err
