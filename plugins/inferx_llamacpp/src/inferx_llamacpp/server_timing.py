"""llama-server's own per-request clock: the ``timings`` object on a stream's last chunk.

llama-server (tools/server/server-common.cpp, ``server_slot_stats::to_json``)
ends every reply with ``timings``: ``cache_n`` (prompt tokens reused from
the slot's cache), ``prompt_n`` and ``prompt_ms`` (prompt processing, from
the slot's start to the last prompt batch: the first token is sampled from
that batch's logits, so it is the server's time to first token),
``predicted_n`` and ``predicted_ms`` (generation after the first token), and,
when it speculates, ``draft_n`` and ``draft_n_accepted`` (draft tokens
proposed and accepted). No flag is needed. It reports no queue time: a
request waiting for a free slot shows in the client's rest.
"""

from __future__ import annotations

from inferx_core import ServerTiming

__all__ = ["SERVER_TIMING"]

SERVER_TIMING = ServerTiming(
    name="llama.cpp",
    reply_fields=("timings",),
    ttft_ms="timings.prompt_ms",
    decode_ms="timings.predicted_ms",
    spec_draft_tokens="timings.draft_n",
    spec_accepted_tokens="timings.draft_n_accepted",
    cached_tokens="timings.cache_n",
    # prompt_ms starts when a slot starts the prompt: what comes before and after is not
    unclocked=(
        "llama-server's HTTP handling, tokenizing the prompt and handing the task to a "
        "slot, and writing the first chunk, not clocked by llama-server"
    ),
)
