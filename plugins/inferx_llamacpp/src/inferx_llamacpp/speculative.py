"""``speculative:`` as llama-server's ``--spec-*`` flags (the llama.cpp of llama-cpp-python 0.3.36).

That llama-server (``common/arg.cpp``, ``common/speculative.cpp``) picks a
method with ``--spec-type`` and reads the draft length from the method's own
flag:

=============  ==================================================================
InferX method  llama-server flags
=============  ==================================================================
draft_model    --spec-type draft-simple --spec-draft-model GGUF --spec-draft-n-max N
eagle3         --spec-type draft-eagle3 --spec-draft-model GGUF --spec-draft-n-max N
mtp            --spec-type draft-mtp [--spec-draft-model GGUF] --spec-draft-n-max N
               (without a draft model, the target GGUF's own nextn/MTP layers)
ngram          --spec-type ngram-simple --spec-ngram-simple-size-m N
               [--spec-ngram-simple-size-n L] (L: the prompt-lookup length)
=============  ==================================================================

Refused, each with the field and the fix: ``eagle`` (EAGLE-1/2 heads: this
llama-server runs EAGLE-3 only), ``eagle_topk`` other than 1 and
``num_draft_tokens`` (SGLang's tree; llama-server drafts one chain), and an
ngram lookup range (``prompt_lookup_min`` < ``prompt_lookup_max``: llama-server's
ngram-simple matches one length). Older llama-servers spelled these
``--model-draft``/``--draft-max``, which this one has removed; ``inferx plan
--check-args`` checks the argv against the binary's own ``--help``.
"""

from __future__ import annotations

from inferx_core import ServerConfig, UserFacingError

__all__ = ["SPEC_TYPES", "speculative_argv"]

#: InferX's method -> llama-server's --spec-type.
SPEC_TYPES = {
    "draft_model": "draft-simple",
    "eagle3": "draft-eagle3",
    "mtp": "draft-mtp",
    "ngram": "ngram-simple",
}


def _refuse(server: ServerConfig) -> None:
    spec = server.speculative
    assert spec is not None
    if spec.method not in SPEC_TYPES:
        raise UserFacingError(
            f"speculative.method {spec.method!r}: llama-server has no such speculation "
            f"(it runs {', '.join(SPEC_TYPES)}; EAGLE-3 heads as eagle3); pick one of those "
            "or another engine"
        )
    if spec.eagle_topk not in (None, 1):
        raise UserFacingError(
            f"speculative.eagle_topk {spec.eagle_topk}: llama-server drafts one chain of tokens, "
            "not a tree; remove eagle_topk (or set it to 1) for engine llamacpp"
        )
    if spec.num_draft_tokens is not None:
        raise UserFacingError(
            "speculative.num_draft_tokens is SGLang's; llama-server verifies "
            "num_speculative_tokens per step: remove num_draft_tokens for engine llamacpp"
        )
    low, high = spec.prompt_lookup_min, spec.prompt_lookup_max
    if low is not None and high is not None and low != high:
        raise UserFacingError(
            f"speculative.prompt_lookup_min {low} and prompt_lookup_max {high}: llama-server's "
            "ngram-simple looks up one n-gram length; set one of them (or both equal)"
        )


def speculative_argv(server: ServerConfig) -> list[str]:
    """The ``--spec-*`` flags for ``server.speculative``; ``[]`` without it."""
    spec = server.speculative
    if spec is None:
        return []
    _refuse(server)
    n = str(spec.num_speculative_tokens)
    argv = ["--spec-type", SPEC_TYPES[spec.method]]
    if spec.method == "ngram":
        argv += ["--spec-ngram-simple-size-m", n]
        lookup = spec.prompt_lookup_max or spec.prompt_lookup_min
        if lookup is not None:
            argv += ["--spec-ngram-simple-size-n", str(lookup)]
        return argv
    if spec.draft_model:
        argv += ["--spec-draft-model", spec.draft_model]
    return [*argv, "--spec-draft-n-max", n]
