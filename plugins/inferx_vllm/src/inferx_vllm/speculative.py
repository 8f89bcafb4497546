"""``speculative:`` as vLLM's ``--speculative-config`` JSON (vLLM 0.1x-0.3x ``SpeculativeConfig``).

vLLM takes one JSON object: ``method`` (``mtp``, ``eagle``, ``eagle3``,
``ngram``, ``draft_model``: InferX's names are vLLM's), ``num_speculative_tokens``,
``model`` (the draft or EAGLE head), ``prompt_lookup_min/max`` (ngram). vLLM
drafts a chain, not a tree: SGLang's ``eagle_topk > 1`` and
``num_draft_tokens`` have no vLLM setting and are refused by name.
"""

from __future__ import annotations

import json
from typing import Any

from inferx_core import ServerConfig, UserFacingError

__all__ = ["FLAG", "speculative_argv", "speculative_config"]

FLAG = "--speculative-config"


def speculative_config(server: ServerConfig) -> dict[str, Any] | None:
    """The ``--speculative-config`` object for ``server.speculative`` (None: no speculation)."""
    spec = server.speculative
    if spec is None:
        return None
    if any(key.removeprefix("--").replace("_", "-") == FLAG[2:] for key in server.engine_args):
        raise UserFacingError(
            "engine_args.speculative-config and speculative: both set; keep one (speculative: "
            "is what InferX reads for point ids, exports and the golden acceptance check)"
        )
    if spec.eagle_topk not in (None, 1):
        raise UserFacingError(
            f"speculative.eagle_topk {spec.eagle_topk}: vLLM drafts one chain of tokens, not "
            "SGLang's tree; remove eagle_topk (or set it to 1) for engine vllm"
        )
    if spec.num_draft_tokens is not None:
        raise UserFacingError(
            "speculative.num_draft_tokens is SGLang's --speculative-num-draft-tokens; vLLM "
            "verifies num_speculative_tokens per step: remove num_draft_tokens for engine vllm"
        )
    out: dict[str, Any] = {
        "method": spec.method,
        "num_speculative_tokens": spec.num_speculative_tokens,
    }
    if spec.draft_model:
        out["model"] = spec.draft_model
    if spec.prompt_lookup_min is not None:
        out["prompt_lookup_min"] = spec.prompt_lookup_min
    if spec.prompt_lookup_max is not None:
        out["prompt_lookup_max"] = spec.prompt_lookup_max
    return out


def speculative_argv(server: ServerConfig) -> list[str]:
    """``["--speculative-config", JSON]``, or ``[]`` without ``speculative:``."""
    config = speculative_config(server)
    if config is None:
        return []
    return [FLAG, json.dumps(config, separators=(",", ":"), sort_keys=True)]
