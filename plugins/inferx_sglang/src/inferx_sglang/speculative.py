"""``speculative:`` as SGLang's ``--speculative-*`` flags (SGLang 0.5.x ``ServerArgs``).

=============  =========================  ==================================
InferX method  --speculative-algorithm    draft model
=============  =========================  ==================================
mtp            NEXTN (SGLang's alias of   optional (the checkpoint's own
               EAGLE for MTP layers)      MTP layer when absent)
eagle          EAGLE                      --speculative-draft-model-path
eagle3         EAGLE3                     --speculative-draft-model-path
draft_model    STANDALONE                 --speculative-draft-model-path
ngram          NGRAM                      none
=============  =========================  ==================================

``--speculative-num-steps`` is ``num_speculative_tokens``; ``--speculative-eagle-topk``
is ``eagle_topk`` (1 when absent: a chain, InferenceX's recipes); and
``--speculative-num-draft-tokens`` is ``num_draft_tokens``, else
``num_speculative_tokens + 1`` (the chain plus its root, what SGLang needs with
top-k 1). SGLang's ngram takes no prompt-lookup lengths and sets its own
breadth: ``prompt_lookup_min/max`` and ``eagle_topk`` are refused for it by name.
"""

from __future__ import annotations

from inferx_core import ServerConfig, UserFacingError

__all__ = ["ALGORITHMS", "speculative_argv"]

ALGORITHMS = {
    "mtp": "NEXTN",
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "draft_model": "STANDALONE",
    "ngram": "NGRAM",
}


def _refuse_ngram_settings(server: ServerConfig) -> None:
    spec = server.speculative
    assert spec is not None
    if spec.prompt_lookup_min is not None or spec.prompt_lookup_max is not None:
        raise UserFacingError(
            "speculative.prompt_lookup_min/max are vLLM's ngram settings; SGLang's NGRAM "
            "matches a trie (--speculative-ngram-* in engine_args): remove them for engine sglang"
        )
    if spec.eagle_topk is not None:
        raise UserFacingError(
            "speculative.eagle_topk is not read by SGLang's NGRAM (its breadth is "
            "--speculative-ngram-max-bfs-breadth, in engine_args): remove it for method ngram"
        )


def speculative_argv(server: ServerConfig) -> list[str]:
    """The ``--speculative-*`` flags for ``server.speculative``; ``[]`` without it."""
    spec = server.speculative
    if spec is None:
        return []
    algorithm = ALGORITHMS.get(spec.method)
    if algorithm is None:  # a method a newer InferX knows and this mapping does not
        raise UserFacingError(
            f"speculative.method {spec.method!r} has no SGLang algorithm here; SGLang runs "
            f"{', '.join(ALGORITHMS)}"
        )
    if spec.method == "ngram":
        _refuse_ngram_settings(server)
    argv = ["--speculative-algorithm", algorithm]
    if spec.draft_model:
        argv += ["--speculative-draft-model-path", spec.draft_model]
    argv += ["--speculative-num-steps", str(spec.num_speculative_tokens)]
    if spec.method != "ngram":
        argv += ["--speculative-eagle-topk", str(spec.eagle_topk or 1)]
    draft_tokens = spec.num_draft_tokens or spec.num_speculative_tokens + 1
    argv += ["--speculative-num-draft-tokens", str(draft_tokens)]
    return argv
