"""``speculative:`` as SGLang's ``--speculative-*`` flags, read back by SGLang's own parser.

The argv of each method goes through ``prepare_server_args`` in the SGLang
interpreter (``.venv-sglang``; the plugin's probe, :mod:`inferx_sglang.argv_check`):
it must parse, undeprecated, and the parsed values must be the config's.
Without that interpreter the parser tests skip; under ``INFERX_REQUIRE_ENGINE=1``
they fail.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from inferx_core import ServerConfig, UserFacingError
from inferx_sglang import argv_check
from inferx_sglang.speculative import speculative_argv

ROOT = Path(__file__).resolve().parents[3]
SGLANG_PYTHON_ENV = "INFERX_SGLANG_PYTHON"
REQUIRE_ENGINE_ENV = "INFERX_REQUIRE_ENGINE"

# name -> (speculative config, what SGLang must parse from it)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "mtp": (
        {"method": "mtp", "num_speculative_tokens": 3},
        {"speculative_algorithm": "NEXTN", "speculative_num_steps": 3,
         "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4,
         "speculative_draft_model_path": None},
    ),
    "eagle-tree": (
        {"method": "eagle", "num_speculative_tokens": 5, "draft_model": "org/eagle",
         "eagle_topk": 8, "num_draft_tokens": 32},
        {"speculative_algorithm": "EAGLE", "speculative_num_steps": 5,
         "speculative_eagle_topk": 8, "speculative_num_draft_tokens": 32,
         "speculative_draft_model_path": "org/eagle"},
    ),
    "eagle3": (
        {"method": "eagle3", "num_speculative_tokens": 4, "draft_model": "org/eagle3"},
        {"speculative_algorithm": "EAGLE3", "speculative_num_steps": 4,
         "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 5,
         "speculative_draft_model_path": "org/eagle3"},
    ),
    "draft_model": (
        {"method": "draft_model", "num_speculative_tokens": 2, "draft_model": "org/small"},
        {"speculative_algorithm": "STANDALONE", "speculative_num_steps": 2,
         "speculative_num_draft_tokens": 3, "speculative_draft_model_path": "org/small"},
    ),
    "ngram": (
        {"method": "ngram", "num_speculative_tokens": 3},
        {"speculative_algorithm": "NGRAM", "speculative_num_steps": 3,
         "speculative_num_draft_tokens": 4, "speculative_draft_model_path": None},
    ),
}  # fmt: skip


def _server(spec: dict[str, Any] | None) -> ServerConfig:
    return ServerConfig(engine="sglang", model="deepseek-ai/DeepSeek-R1", speculative=spec)


def _python() -> Path:
    given = os.environ.get(SGLANG_PYTHON_ENV)
    python = Path(given) if given else ROOT / ".venv-sglang" / "bin" / "python"
    if not python.is_file():
        why = f"no SGLang interpreter: run `make sglang` or set {SGLANG_PYTHON_ENV}"
        if os.environ.get(REQUIRE_ENGINE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENGINE_ENV}=1 but {why}", pytrace=False)
        pytest.skip(why)
    return python


@pytest.fixture(scope="module")
def parsed() -> dict[str, Any]:
    argvs = {
        name: ["--model-path", "deepseek-ai/DeepSeek-R1", *speculative_argv(_server(spec))]
        for name, (spec, _) in CASES.items()
    }
    return argv_check.probe(_python(), argvs)["results"]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_sglang_parses_each_method(parsed: dict[str, Any], name: str) -> None:
    result = parsed[name]
    assert argv_check.verdict(result) is None, result
    for dest, value in CASES[name][1].items():
        assert result["namespace"][dest] == value, (name, dest)


def test_no_speculative_no_flags() -> None:
    assert speculative_argv(_server(None)) == []


def test_chain_defaults_draft_tokens_to_steps_plus_one() -> None:
    argv = speculative_argv(_server({"method": "mtp", "num_speculative_tokens": 2}))
    assert argv == [
        "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "3",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "named"),
    [({"prompt_lookup_max": 4}, "prompt_lookup_min/max"), ({"eagle_topk": 2}, "eagle_topk")],
)
def test_vllm_ngram_settings_are_refused_by_name(extra: dict[str, Any], named: str) -> None:
    with pytest.raises(UserFacingError, match=named):
        speculative_argv(_server({"method": "ngram", "num_speculative_tokens": 3, **extra}))


def test_the_launch_argv_and_metrics_carry_it() -> None:
    from inferx_sglang import launch

    server = ServerConfig(
        engine="sglang",
        model="org/Model",
        port=30000,
        speculative={"method": "mtp", "num_speculative_tokens": 3},
    )
    argv = launch.build_argv(server)
    assert argv[argv.index("--speculative-algorithm") + 1] == "NEXTN"
    assert argv[argv.index("--speculative-num-steps") + 1] == "3"
    assert launch.metrics_map().spec_decode_accept_length == "sglang:spec_accept_length"
