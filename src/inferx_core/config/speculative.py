"""Speculative decoding as configuration: which method, how many tokens, what acceptance to expect.

``speculative:`` in a server config asks the engine for speculative decoding;
each engine plugin maps it to its own flags (vLLM ``--speculative-config``,
SGLang ``--speculative-algorithm`` ..., TensorRT-LLM ``speculative_config`` in
its extra options) and refuses, naming the method, one it cannot run.

``golden_acceptance_length`` is InferenceX's practice: the mean acceptance
length (tokens per verification step, the bonus token included, so between 1
and ``num_speculative_tokens + 1``) a healthy draft reaches on this model; the
result says how far the measured one is from it, and the validity check
``spec_acceptance`` invalidates a point off by more than
``acceptance_tolerance`` (relative). docs/speculative.md has the definitions.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from inferx_core.config.base import StrictModel

__all__ = ["DRAFT_METHODS", "SpeculativeConfig", "SpeculativeMethod", "spec_decoding_name"]

SpeculativeMethod = Literal["mtp", "eagle", "eagle3", "ngram", "draft_model"]
#: Methods that run a separate draft model (its path or hub id is required).
DRAFT_METHODS = frozenset({"eagle", "eagle3", "draft_model"})
MAX_SPECULATIVE_TOKENS = 64


class SpeculativeConfig(StrictModel):
    """``speculative: {method: mtp, num_speculative_tokens: 3, golden_acceptance_length: 2.6}``."""

    method: SpeculativeMethod = Field(
        description="mtp (the model's own multi-token-prediction heads), eagle, eagle3, "
        "ngram (prompt lookup, no draft model) or draft_model (a small model of the same "
        "tokenizer)"
    )
    num_speculative_tokens: int = Field(
        ge=1,
        le=MAX_SPECULATIVE_TOKENS,
        description="Tokens drafted per step (SGLang: --speculative-num-steps)",
    )
    draft_model: str | None = Field(
        default=None,
        description="Draft model path or hub id: required by eagle, eagle3 and draft_model; "
        "optional for mtp (the engine's default MTP head); refused for ngram",
    )
    eagle_topk: int | None = Field(
        default=None, ge=1, description="SGLang --speculative-eagle-topk (None: 1)"
    )
    num_draft_tokens: int | None = Field(
        default=None,
        ge=1,
        description="SGLang --speculative-num-draft-tokens (None: num_speculative_tokens + 1, "
        "the value for eagle_topk 1)",
    )
    prompt_lookup_min: int | None = Field(default=None, ge=1, description="ngram: shortest match")
    prompt_lookup_max: int | None = Field(default=None, ge=1, description="ngram: longest match")
    golden_acceptance_length: float | None = Field(
        default=None,
        ge=1,
        description="Expected mean acceptance length (tokens per step, bonus token included); "
        "the result says how far the measured one is from it",
    )
    acceptance_tolerance: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="Relative distance from golden_acceptance_length that invalidates a point",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SpeculativeConfig:
        if self.method in DRAFT_METHODS and not self.draft_model:
            raise ValueError(
                f"speculative.method {self.method!r} needs speculative.draft_model (the draft "
                "model's path or hub id); or use method mtp or ngram, which need none"
            )
        if self.method == "ngram" and self.draft_model:
            raise ValueError(
                "speculative.draft_model is not read by method 'ngram' (it looks up the "
                "prompt); remove it, or set method: draft_model"
            )
        if self.method != "ngram" and (self.prompt_lookup_min or self.prompt_lookup_max):
            raise ValueError(
                "speculative.prompt_lookup_min/max are read only by method 'ngram'; remove them"
            )
        low, high = self.prompt_lookup_min, self.prompt_lookup_max
        if low is not None and high is not None and low > high:
            raise ValueError(
                f"speculative.prompt_lookup_min ({low}) must be <= prompt_lookup_max ({high})"
            )
        top = self.num_speculative_tokens + 1
        golden = self.golden_acceptance_length
        if golden is not None and golden > top:
            raise ValueError(
                f"speculative.golden_acceptance_length {golden:g} is more than "
                f"num_speculative_tokens + 1 = {top} (the most one step can accept); "
                "give the mean tokens per step, bonus token included"
            )
        return self


def spec_decoding_name(spec: SpeculativeConfig | None) -> str:
    """InferenceX's ``spec_decoding`` value: the method, or ``none``."""
    return spec.method if spec is not None else "none"
