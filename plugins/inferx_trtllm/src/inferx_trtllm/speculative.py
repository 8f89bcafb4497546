"""``speculative:`` as TensorRT-LLM's ``speculative_config`` in ``--extra_llm_api_options``.

TensorRT-LLM 1.x (PyTorch backend) reads a ``speculative_config`` mapping in its
LLM API options, picked by ``decoding_type`` (``tensorrt_llm/llmapi/llm_args.py``:
``MTPDecodingConfig``, ``EagleDecodingConfig``, ``DraftTargetDecodingConfig``,
``NGramDecodingConfig``):

=============  ===========================================================
InferX method  speculative_config
=============  ===========================================================
mtp            decoding_type MTP, num_nextn_predict_layers N
eagle3         decoding_type Eagle, max_draft_len N, speculative_model_dir,
               eagle3_one_model true (the PyTorch backend runs EAGLE-3 heads)
draft_model    decoding_type DraftTarget, max_draft_len N, speculative_model_dir
ngram          decoding_type NGram, max_draft_len N [, max_matching_ngram_size]
=============  ===========================================================

``eagle`` (EAGLE-1/2 heads) is refused: the PyTorch backend's Eagle decoding is
EAGLE-3. SGLang's ``eagle_topk``/``num_draft_tokens`` and an ngram's
``prompt_lookup_min`` have no setting here and are refused by name. These
field names are from TensorRT-LLM's source, not its parser: its wheel needs
CUDA to import, so no TensorRT-LLM code checks them on a CPU machine.
"""

from __future__ import annotations

from typing import Any

from inferx_core import ServerConfig, UserFacingError

__all__ = ["KEY", "speculative_options"]

KEY = "speculative_config"


def _refuse(server: ServerConfig) -> None:
    spec = server.speculative
    assert spec is not None
    if spec.method == "eagle":
        raise UserFacingError(
            "speculative.method 'eagle': TensorRT-LLM's PyTorch backend runs EAGLE-3 heads "
            "only; use method eagle3 with an EAGLE-3 draft, or another engine for EAGLE-1/2"
        )
    for name in ("eagle_topk", "num_draft_tokens", "prompt_lookup_min"):
        if getattr(spec, name) is not None:
            raise UserFacingError(
                f"speculative.{name} has no TensorRT-LLM setting (draft length is "
                "num_speculative_tokens); remove it for engine trtllm"
            )


def speculative_options(server: ServerConfig) -> dict[str, Any]:
    """``{"speculative_config": {...}}`` to merge into the LLM API options; ``{}`` without it."""
    spec = server.speculative
    if spec is None:
        return {}
    _refuse(server)
    n = spec.num_speculative_tokens
    config: dict[str, Any]
    if spec.method == "mtp":
        config = {"decoding_type": "MTP", "num_nextn_predict_layers": n}
        if spec.draft_model:
            raise UserFacingError(
                "speculative.draft_model with method mtp: TensorRT-LLM's MTP uses the "
                "checkpoint's own MTP layers; remove draft_model"
            )
    elif spec.method == "eagle3":
        config = {
            "decoding_type": "Eagle",
            "max_draft_len": n,
            "speculative_model_dir": spec.draft_model,
            "eagle3_one_model": True,
        }
    elif spec.method == "draft_model":
        config = {
            "decoding_type": "DraftTarget",
            "max_draft_len": n,
            "speculative_model_dir": spec.draft_model,
        }
    else:  # ngram
        config = {"decoding_type": "NGram", "max_draft_len": n}
        if spec.prompt_lookup_max is not None:
            config["max_matching_ngram_size"] = spec.prompt_lookup_max
    return {KEY: config}
