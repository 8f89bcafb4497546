"""``speculative:`` as TensorRT-LLM's ``speculative_config`` (LLM API options).

TensorRT-LLM cannot be imported here (its wheel needs CUDA), so the reference
is a table written from ``tensorrt_llm/llmapi/llm_args.py`` (TensorRT-LLM 1.x:
the ``*DecodingConfig`` pydantic models, ``extra="forbid"``): each produced
mapping's ``decoding_type`` must be one of them and every key one of its
fields. Not TensorRT-LLM's parser (docs/engines.md says so).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from inferx_core import ServerConfig, UserFacingError
from inferx_trtllm.speculative import KEY, speculative_options

# decoding_type -> the fields InferX may write (TensorRT-LLM 1.x llm_args.py).
DECODING_FIELDS: dict[str, set[str]] = {
    "MTP": {"decoding_type", "num_nextn_predict_layers"},
    "Eagle": {"decoding_type", "max_draft_len", "speculative_model_dir", "eagle3_one_model"},
    "DraftTarget": {"decoding_type", "max_draft_len", "speculative_model_dir"},
    "NGram": {"decoding_type", "max_draft_len", "max_matching_ngram_size"},
}

CASES: dict[str, dict[str, Any]] = {
    "mtp": {"method": "mtp", "num_speculative_tokens": 3},
    "eagle3": {"method": "eagle3", "num_speculative_tokens": 3, "draft_model": "/m/eagle3"},
    "draft_model": {"method": "draft_model", "num_speculative_tokens": 4, "draft_model": "/m/s"},
    "ngram": {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 3},
}


def _server(spec: dict[str, Any] | None) -> ServerConfig:
    return ServerConfig(engine="trtllm", model="nvidia/DeepSeek-R1-FP4", speculative=spec)


@pytest.mark.parametrize("name", list(CASES))
def test_keys_are_tensorrt_llm_fields(name: str) -> None:
    options = speculative_options(_server(CASES[name]))
    config = yaml.safe_load(yaml.safe_dump(options))[KEY]  # as the YAML file carries it
    assert set(config) <= DECODING_FIELDS[config["decoding_type"]]


def test_values() -> None:
    assert speculative_options(_server(CASES["mtp"])) == {
        KEY: {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    }
    assert speculative_options(_server(CASES["eagle3"]))[KEY] == {
        "decoding_type": "Eagle",
        "max_draft_len": 3,
        "speculative_model_dir": "/m/eagle3",
        "eagle3_one_model": True,
    }
    ngram = speculative_options(_server(CASES["ngram"]))[KEY]
    assert ngram == {"decoding_type": "NGram", "max_draft_len": 5, "max_matching_ngram_size": 3}
    assert speculative_options(_server(None)) == {}


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ({"method": "eagle", "num_speculative_tokens": 2, "draft_model": "x"}, "EAGLE-3"),
        ({"method": "mtp", "num_speculative_tokens": 2, "eagle_topk": 2}, "eagle_topk"),
        ({"method": "mtp", "num_speculative_tokens": 2, "num_draft_tokens": 3}, "num_draft"),
        ({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 1}, "lookup_min"),
        ({"method": "mtp", "num_speculative_tokens": 2, "draft_model": "x"}, "MTP layers"),
    ],
)
def test_what_tensorrt_llm_cannot_do_is_refused_by_name(spec: dict[str, Any], named: str) -> None:
    with pytest.raises(UserFacingError, match=named):
        speculative_options(_server(spec))


def test_the_llm_api_options_carry_it_and_extra_options_may_not() -> None:
    from inferx_trtllm import launch

    server = _server({"method": "mtp", "num_speculative_tokens": 3})
    assert launch.llm_api_options(server)[KEY] == speculative_options(server)[KEY]
    assert KEY not in launch.llm_api_options(_server(None))
    clash = server.model_copy(
        update={"plugin_options": {"trtllm": {"extra_llm_api_options": {KEY: {}}}}}
    )
    with pytest.raises(UserFacingError, match="set `speculative`"):
        launch.options(clash)
