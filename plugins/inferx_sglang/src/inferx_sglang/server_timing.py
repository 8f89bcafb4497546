"""What SGLang reports per request: speculative statistics and cached tokens.

SGLang 0.5.23's OpenAI API (sglang/srt/entrypoints/openai/protocol.py) carries
no per-request timing. A request that sets ``return_spec_tokens_details``
gets ``sglext.spec_tokens_details`` (``SpecTokensDetails``: ``spec_verify_ct``
verify steps, ``spec_num_proposed_drafts`` and ``spec_num_correct_drafts``
draft tokens proposed and accepted, accept rate and length, the histogram);
``return_cached_tokens_details`` adds ``sglext.cached_tokens_details``
(device / host / storage). ``usage.prompt_tokens_details.cached_tokens`` is
there when the server runs with ``--enable-cache-report``.
"""

from __future__ import annotations

from inferx_core import ServerTiming

__all__ = ["SERVER_TIMING"]

_SPEC = "sglext.spec_tokens_details"

SERVER_TIMING = ServerTiming(
    name="sglang",
    reply_fields=("sglext", "usage"),
    request_body={"return_spec_tokens_details": True, "return_cached_tokens_details": True},
    spec_drafts=f"{_SPEC}.spec_verify_ct",
    spec_draft_tokens=f"{_SPEC}.spec_num_proposed_drafts",
    spec_accepted_tokens=f"{_SPEC}.spec_num_correct_drafts",
    cached_tokens="usage.prompt_tokens_details.cached_tokens",
)
