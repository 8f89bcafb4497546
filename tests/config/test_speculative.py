"""``speculative:`` in the server config: strict, explained refusals, carried by ids and exports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from result_factory import make_model

from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.config.points import point_ids, server_id
from inferx_core.config.speculative import SpeculativeConfig, spec_decoding_name
from inferx_core.interop.metadata import known_from_result, resolve_metadata


def _spec(**kw: Any) -> SpeculativeConfig:
    return SpeculativeConfig(**{"method": "mtp", "num_speculative_tokens": 3, **kw})


def test_defaults_and_server_field() -> None:
    server = ServerConfig(engine="vllm", model="m", speculative={"method": "mtp",
                          "num_speculative_tokens": 1})  # fmt: skip
    assert server.speculative == _spec(num_speculative_tokens=1)
    assert server.speculative.acceptance_tolerance == 0.1
    assert ServerConfig(engine="vllm", model="m").speculative is None


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"method": "eagle"}, "needs speculative.draft_model"),
        ({"method": "draft_model"}, "needs speculative.draft_model"),
        ({"method": "ngram", "draft_model": "x"}, "not read by method 'ngram'"),
        ({"prompt_lookup_max": 3}, "read only by method 'ngram'"),
        ({"method": "ngram", "prompt_lookup_min": 5, "prompt_lookup_max": 2}, "must be <="),
        ({"golden_acceptance_length": 4.5}, r"num_speculative_tokens \+ 1 = 4"),
        ({"golden_acceptance_length": 0.5}, "golden_acceptance_length"),
        ({"num_speculative_tokens": 0}, "num_speculative_tokens"),
        ({"method": "medusa"}, "method"),
        ({"drafts": 3}, "drafts"),
        ({"acceptance_tolerance": 0}, "acceptance_tolerance"),
    ],
)
def test_refusals_name_the_field_and_the_fix(kw: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        _spec(**kw)


def test_golden_at_the_ceiling_is_allowed() -> None:
    assert _spec(golden_acceptance_length=4.0).golden_acceptance_length == 4.0


def _run(**kw: Any) -> RunConfig:
    return RunConfig(engine="vllm", model="org/DeepSeek-R1", output_dir=Path("/x"), **kw)


def test_point_ids_carry_the_method_and_draft_length() -> None:
    plain = server_id(_run())
    spec = server_id(_run(speculative=_spec().model_dump()))
    assert spec == f"{plain}-spec-mtp-n3"
    other = server_id(_run(speculative=_spec(num_speculative_tokens=1).model_dump()))
    assert other != spec and "spec-mtp" in other
    assert all("-spec-mtp-n3-" in pid for _, pid in point_ids(_run(speculative=_spec())))


def test_inferencex_spec_decoding_comes_from_the_config() -> None:
    assert spec_decoding_name(None) == "none" and spec_decoding_name(_spec()) == "mtp"
    result = make_model("p1")
    config = dict(result.provenance.config or {})
    with_spec = result.model_copy(
        update={
            "provenance": result.provenance.model_copy(
                update={"config": {**config, "speculative": _spec().model_dump()}}
            )
        }
    )
    assert known_from_result(with_spec)["spec_decoding"] == "mtp"
    meta = resolve_metadata(with_spec, {"hw": "h200", "precision": "fp8"})
    assert meta.values["spec_decoding"] == "mtp" and meta.origins["spec_decoding"] == "result"
    plain = resolve_metadata(result, {"hw": "h200", "precision": "fp8"})
    assert plain.values["spec_decoding"] == "none" and plain.origins["spec_decoding"] == "default"


def test_reasoning_knob_is_sent_the_way_each_api_wants() -> None:
    from inferx_core.config.models import Workload
    from inferx_core.config.reasoning import reasoning_body

    w = Workload(api="chat", reasoning={"thinking": False, "effort": "low"})
    assert reasoning_body(w.reasoning, w.api) == {
        "chat_template_kwargs": {"enable_thinking": False},
        "reasoning_effort": "low",
    }
    assert reasoning_body(None, "completions") == {}
    with pytest.raises(ValueError, match=r"workload\.api: chat"):
        reasoning_body(Workload(reasoning={"thinking": True}).reasoning, "completions")
    with pytest.raises(ValidationError, match="effort"):
        Workload(reasoning={"effort": "max"})
