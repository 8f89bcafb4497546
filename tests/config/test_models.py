"""Config models and loader: defaults, strictness, error messages, round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.config.loader import ConfigError, load_config, load_run_configs
from inferx_core.config.models import LoadProfile, RunConfig
from inferx_core.config.sweep import SweepConfig


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_two_line_config_has_sensible_defaults(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "run.yaml", "engine: vllm\nmodel: org/model\n"))
    assert isinstance(cfg, RunConfig)
    assert cfg.workload.isl == 1024 and cfg.workload.osl == 1024
    assert cfg.workload.range_semantics == "inferencex" and cfg.workload.range_ratio == 0.8
    assert cfg.workload.ignore_eos is True
    assert cfg.load.concurrency == [1]
    assert cfg.prefix_caching is False
    assert cfg.parallelism.gpus == 1
    assert cfg.name_served == "org/model"


def test_unknown_key_names_file_line_path_and_suggestion(tmp_path: Path) -> None:
    path = write(
        tmp_path, "bad.yaml", "engine: vllm\nmodel: m\nworkload:\n  isl: 128\n  osll: 64\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 5" in message
    assert "workload.osll" in message
    assert "did you mean 'osl'" in message
    assert "range_semantics" in message  # allowed keys are listed


def test_bad_value_names_field_and_allowed_values(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "engine: vllm\nmodel: m\nworkload:\n  api: grpc\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "line 4" in message and "workload.api" in message
    assert "'completions'" in message and "'chat'" in message and "'grpc'" in message


def test_missing_required_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model: required field is missing"):
        load_config(write(tmp_path, "bad.yaml", "engine: vllm\n"))


def test_json_config_and_json_syntax_error(tmp_path: Path) -> None:
    ok = load_config(write(tmp_path, "run.json", json.dumps({"engine": "vllm", "model": "m"})))
    assert ok.engine == "vllm"
    with pytest.raises(ConfigError, match="line 1: invalid JSON"):
        load_config(write(tmp_path, "bad.json", "{engine: vllm"))


def test_unknown_suffix_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"use \.yaml, \.yml or \.json"):
        load_config(write(tmp_path, "run.toml", "engine = 'vllm'"))
    with pytest.raises(ConfigError, match="cannot read file"):
        load_config(tmp_path / "absent.yaml")


def test_load_profile_modes_are_exclusive() -> None:
    with pytest.raises(ValueError, match="not both"):
        LoadProfile(concurrency=[1], request_rate=[2.0])
    assert LoadProfile(request_rate=[2.0]).concurrency is None


def test_sweep_expands_matrix(tmp_path: Path) -> None:
    text = """
base:
  engine: vllm
  model: m
matrix:
  tp: [1, 2]
  scenarios:
    - {name: chat, isl: 1024, osl: 1024}
    - {name: reasoning, isl: 1024, osl: 8192}
  concurrency: [4, 8]
"""
    runs = load_run_configs(write(tmp_path, "sweep.yaml", text))
    assert len(runs) == 4
    assert {(r.parallelism.tp, r.workload.osl) for r in runs} == {
        (1, 1024),
        (1, 8192),
        (2, 1024),
        (2, 8192),
    }
    assert all(r.load.concurrency == [4, 8] for r in runs)
    assert {r.name for r in runs} == {"chat", "reasoning"}
    assert isinstance(load_config(tmp_path / "sweep.yaml"), SweepConfig)


def test_sweep_error_path_inside_base(tmp_path: Path) -> None:
    text = "base:\n  engine: vllm\n  model: m\n  parallelism:\n    tp: 0\n"
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, "sweep.yaml", text))
    assert "base.parallelism.tp" in str(info.value) and "line 5" in str(info.value)


run_configs = st.builds(
    RunConfig,
    engine=st.sampled_from(["vllm", "sglang", "trtllm"]),
    model=st.text(min_size=1, max_size=20).filter(lambda s: s.strip() == s and s),
    max_num_seqs=st.none() | st.integers(1, 1024),
    engine_args=st.dictionaries(
        st.from_regex(r"[a-z][a-z-]{0,10}", fullmatch=True),
        st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
        max_size=3,
    ),
)


@given(run_configs)
def test_config_round_trips_through_yaml_and_json(cfg: RunConfig) -> None:
    dumped = cfg.model_dump(mode="json")
    assert RunConfig.model_validate(json.loads(json.dumps(dumped))) == cfg
    assert RunConfig.model_validate(yaml.safe_load(yaml.safe_dump(dumped))) == cfg


def test_sweep_matrix_values_are_validated_with_path(tmp_path: Path) -> None:
    text = "base:\n  engine: vllm\n  model: m\nmatrix:\n  concurrency: [4, 0]\n"
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, "sweep.yaml", text))
    assert "matrix.concurrency.1" in str(info.value)


def test_vllm_semantics_need_ratio_below_one(tmp_path: Path) -> None:
    text = "engine: vllm\nmodel: m\nworkload:\n  range_semantics: vllm\n  range_ratio: 1.0\n"
    with pytest.raises(ConfigError, match="range_ratio < 1"):
        load_config(write(tmp_path, "run.yaml", text))
