"""Sweep expansion (precision axis, concurrency ranges, unique ids) and plan filters."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from pydantic import Field, ValidationError

from inferx_core.cli.filters import add_filter_arguments, apply_filters
from inferx_core.config.axes import ConcurrencyRange, Precision, geometric_range
from inferx_core.config.models import RunConfig
from inferx_core.config.points import point_ids, server_id
from inferx_core.config.sweep import (
    SweepConfig,
    SweepError,
    SweepMatrix,
    count_points,
    expand_sweep,
    filter_runs,
    scenario_matches,
)
from inferx_core.errors import UserFacingError


class Matrix(SweepMatrix):
    """SweepMatrix with the two fields config.py gains (what the lead adds)."""

    precision: list[Precision] = Field(default_factory=list)
    concurrency_range: ConcurrencyRange | None = None


BASE = RunConfig(engine="vllm", model="meta-llama/Llama-3.1-8B-Instruct")


def test_geometric_range() -> None:
    assert geometric_range(4, 256) == [4, 8, 16, 32, 64, 128, 256]
    assert geometric_range(4, 100) == [4, 8, 16, 32, 64]  # stop included only when reached
    assert geometric_range(1, 1) == [1]
    assert geometric_range(1, 30, 3) == [1, 3, 9, 27]
    assert geometric_range(1, 10, 1.5) == [1, 2, 3, 5, 8]  # rounded, deduplicated (2.25 -> 2)
    for bad in ((0, 8, 2), (8, 4, 2), (1, 8, 1), (1, 8, 0.5), (1.5, 8, 2)):
        with pytest.raises(ValueError):
            geometric_range(*bad)
    with pytest.raises(ValueError, match="more than"):
        geometric_range(1, 10**9, 1.01)
    assert ConcurrencyRange(start=4, stop=64).levels() == [4, 8, 16, 32, 64]
    with pytest.raises(ValidationError):
        ConcurrencyRange(start=8, stop=4)
    with pytest.raises(ValidationError):
        ConcurrencyRange(start=4, stop=64, factor=1)


def test_expand_sweep_matches_the_existing_expansion() -> None:
    sweep = SweepConfig.model_validate(
        {
            "base": {"engine": "vllm", "model": "m"},
            "matrix": {
                "engine": ["vllm", "sglang"],
                "tp": [1, 2],
                "kv_cache_dtype": ["auto", "fp8"],
                "scenarios": [
                    {"name": "chat", "isl": 1024, "osl": 1024},
                    {"name": "reasoning", "isl": 1024, "osl": 8192},
                ],
                "concurrency": [8, 4],
            },
        }
    )
    mine = expand_sweep(sweep.base, sweep.matrix)
    assert [r.model_dump() for r in mine] == [
        {**r.model_dump(), "load": {**r.load.model_dump(), "concurrency": [4, 8]}}
        for r in SweepConfig.expand(sweep)
    ]
    assert len(mine) == 16


def test_precision_axis_and_concurrency_range() -> None:
    matrix = Matrix(
        tp=[1, 8],
        precision=[
            Precision(name="bf16", dtype="bfloat16"),
            Precision(name="fp8", quantization="fp8", kv_cache_dtype="fp8"),
        ],
        scenarios=[{"name": "chat", "isl": 1024, "osl": 1024}],
        concurrency=[1, 4],
        concurrency_range=ConcurrencyRange(start=4, stop=64, factor=4),
    )
    runs = expand_sweep(BASE, matrix)
    assert len(runs) == 4
    assert all(r.load.concurrency == [1, 4, 16, 64] for r in runs)  # merged, sorted
    bf16, fp8 = runs[0], runs[1]
    assert (bf16.dtype, bf16.kv_cache_dtype, bf16.engine_args) == ("bfloat16", None, {})
    assert (fp8.kv_cache_dtype, fp8.engine_args) == ("fp8", {"quantization": "fp8"})
    assert [r.name for r in runs] == ["bf16-chat", "fp8-chat", "bf16-chat", "fp8-chat"]
    assert [server_id(r) for r in runs] == [
        "bf16-chat-Llama-3.1-8B-Instruct-vllm-tp1",
        "fp8-chat-Llama-3.1-8B-Instruct-vllm-tp1-kvfp8",
        "bf16-chat-Llama-3.1-8B-Instruct-vllm-tp8",
        "fp8-chat-Llama-3.1-8B-Instruct-vllm-tp8-kvfp8",
    ]
    ids = [pid for r in runs for _, pid in point_ids(r)]
    assert len(ids) == len(set(ids)) == 16
    assert ids[0] == "bf16-chat-Llama-3.1-8B-Instruct-vllm-tp1-completions-isl1024-osl1024-c1"
    # stable: the same matrix gives the same ids in the same order
    assert [pid for r in expand_sweep(BASE, matrix) for _, pid in point_ids(r)] == ids
    assert count_points(runs) == 16


def test_precision_keeps_other_engine_args() -> None:
    base = BASE.model_copy(update={"engine_args": {"enforce-eager": True}})
    [run] = expand_sweep(base, Matrix(precision=[Precision(name="q", quantization="awq")]))
    assert run.engine_args == {"enforce-eager": True, "quantization": "awq"}
    assert base.engine_args == {"enforce-eager": True}


def test_colliding_point_ids_are_an_error() -> None:
    # Two models with one basename write the same ids.
    with pytest.raises(SweepError, match="same point id"):
        expand_sweep(BASE, Matrix(model=["org-a/Llama", "org-b/Llama"]))
    with pytest.raises(SweepError, match="unique"):
        expand_sweep(BASE, Matrix(precision=[Precision(name="x"), Precision(name="x")]))
    # dtype-only precision without distinct names would collide too: names are required
    with pytest.raises(ValidationError):
        Precision(name="", dtype="float16")


def runs_for_filters() -> list[RunConfig]:
    matrix = Matrix(
        engine=["vllm", "sglang"],
        tp=[1, 2, 8],
        scenarios=[
            {"name": "chat", "isl": 1024, "osl": 1024},
            {"name": "long-context", "isl": 8192, "osl": 1024},
        ],
        concurrency_range=ConcurrencyRange(start=4, stop=256),
    )
    return expand_sweep(BASE, matrix)


def test_filter_runs() -> None:
    runs = runs_for_filters()
    assert len(runs) == 12
    before = [r.model_dump() for r in runs]
    assert {r.engine for r in filter_runs(runs, engine="sglang")} == {"sglang"}
    assert len(filter_runs(runs, engine=["sglang", "vllm"])) == 12
    assert {r.parallelism.tp for r in filter_runs(runs, tp=[1, 8])} == {1, 8}
    chat = filter_runs(runs, scenario="chat")
    assert len(chat) == 6 and {r.workload.isl for r in chat} == {1024}
    assert len(filter_runs(runs, scenario="long-context")) == 6  # hyphenated name
    assert len(filter_runs(runs, scenario="8192/1024")) == 6
    assert len(filter_runs(runs, scenario="isl8192-osl1024")) == 6
    assert filter_runs(runs, scenario="long") == []  # the name is the run name's suffix
    assert filter_runs(runs, scenario="hat") == []
    capped = filter_runs(runs, max_concurrency=32)
    assert len(capped) == 12 and all(r.load.concurrency == [4, 8, 16, 32] for r in capped)
    assert filter_runs(runs, max_concurrency=2) == []
    both = filter_runs(runs, engine="vllm", tp=8, scenario="chat", max_concurrency=16)
    assert [(r.engine, r.parallelism.tp, r.name, r.load.concurrency) for r in both] == [
        ("vllm", 8, "chat", [4, 8, 16])
    ]
    assert filter_runs(runs) == runs
    assert [r.model_dump() for r in runs] == before  # pure: inputs untouched
    with pytest.raises(ValueError):
        filter_runs(runs, max_concurrency=0)


def test_max_concurrency_filter_on_open_loop_runs() -> None:
    capped = BASE.model_copy(
        update={"load": BASE.load.model_copy(update={"request_rate": [1.0], "concurrency": None})}
    )
    uncapped = capped.model_copy(deep=True)
    capped.load.max_concurrency = 16
    assert filter_runs([capped, uncapped], max_concurrency=16) == [capped]
    assert filter_runs([capped, uncapped], max_concurrency=8) == []


def test_scenario_matches_without_a_name() -> None:
    run = BASE.model_copy(update={"workload": BASE.workload.model_copy(update={"isl": 8})})
    assert scenario_matches(run, "8/1024")
    assert scenario_matches(run, "8x1024")
    assert not scenario_matches(run, "chat")


def parse_filters(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_filter_arguments(parser)
    return parser.parse_args(list(argv))


def test_cli_filter_flags() -> None:
    runs = runs_for_filters()
    assert apply_filters(runs, parse_filters()) is runs
    args = parse_filters("--engine", "vllm", "--tp", "1,2", "--max-concurrency", "8")
    picked = apply_filters(runs, args)
    assert {(r.engine, r.parallelism.tp) for r in picked} == {("vllm", 1), ("vllm", 2)}
    assert all(r.load.concurrency == [4, 8] for r in picked)
    assert len(apply_filters(runs, parse_filters("--scenario", "chat,8192/1024"))) == 12
    with pytest.raises(UserFacingError, match="select none"):
        apply_filters(runs, parse_filters("--engine", "trtllm"))
    with pytest.raises(SystemExit):
        parse_filters("--tp", "one")


def test_cli_filters_module_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, argparse\n"
        "from inferx_core.cli.filters import add_filter_arguments\n"
        "add_filter_arguments(argparse.ArgumentParser())\n"
        "print([m for m in ('pydantic', 'inferx_core.config.sweep') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- after the config.py hook-up -------------------------------------------------------------
SWEEP_YAML = """
base:
  engine: vllm
  model: meta-llama/Llama-3.1-8B-Instruct
  output_dir: OUTPUT
matrix:
  tp: [1, 2]
  precision:
    - {name: bf16, dtype: bfloat16}
    - {name: fp8, quantization: fp8, kv_cache_dtype: fp8}
  scenarios:
    - {name: chat, isl: 1024, osl: 1024}
  concurrency_range: {start: 4, stop: 64, factor: 2}
"""


def test_yaml_sweep_with_precision_and_range(tmp_path: Path) -> None:
    from inferx_core.config.loader import load_run_configs

    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP_YAML.replace("OUTPUT", str(tmp_path / "out")))
    runs = load_run_configs(path)
    assert len(runs) == 4
    assert all(r.load.concurrency == [4, 8, 16, 32, 64] for r in runs)
    assert {r.engine_args.get("quantization") for r in runs} == {None, "fp8"}
    ids = [pid for r in runs for _, pid in point_ids(r)]
    assert len(ids) == len(set(ids)) == 20


def test_yaml_sweep_errors_name_the_field(tmp_path: Path) -> None:
    from inferx_core.config.loader import ConfigError, load_config

    path = tmp_path / "sweep.yaml"
    path.write_text(
        "base: {engine: vllm, model: m}\nmatrix:\n  concurrency_range: {start: 64, stop: 4}\n"
    )
    with pytest.raises(ConfigError, match="concurrency_range"):
        load_config(path)


def test_plan_cli_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inferx_core.cli.app import main

    path = tmp_path / "sweep.yaml"
    path.write_text(
        "base: {engine: vllm, model: m, output_dir: "
        + str(tmp_path)
        + "}\nmatrix:\n  tp: [1, 2]\n  concurrency: [1, 8, 64]\n"
    )
    platform = Path(__file__).parents[1] / "platforms" / "h100x8.json"
    argv = ["plan", str(path), "--platform", str(platform), "--json"]
    assert main([*argv, "--tp", "2", "--max-concurrency", "8"]) == 0
    plans = json.loads(capsys.readouterr().out)
    assert [p["server"] for p in plans] == ["m-vllm-tp2"]
    assert plans[0]["points"] == [
        "m-vllm-tp2-completions-isl1024-osl1024-c1",
        "m-vllm-tp2-completions-isl1024-osl1024-c8",
    ]


def test_docs_sweep_example_expands(tmp_path: Path) -> None:
    import re

    from inferx_core.config.loader import load_run_configs

    text = (Path(__file__).parents[2] / "docs" / "reports.md").read_text()
    [block] = re.findall(r"```yaml\n(.*?)```", text, re.S)
    path = tmp_path / "sweep.yaml"
    path.write_text(block)
    runs = load_run_configs(path)
    assert len(runs) == 2 * 4 * 2 * 2
    assert runs[0].load.concurrency == [4, 8, 16, 32, 64, 128, 256]
