"""The one usage check: is a server's token count one InferX can report?

Usage is the numerator of every token throughput, so a count that cannot be
right must not reach a figure. Two layers, both here so they cannot drift:

* :func:`usage_value_problem`: a ``usage`` field as it arrives in a chunk must
  be a non-negative integer (a bool, a float, a string, a negative number is
  refused; the record cannot even hold it). The stream decoder applies it to
  every usage block it reads.
* :func:`usage_disagreement`: a complete reply's count must agree with what
  was streamed, both ways. Every content chunk carries at least one token, so
  usage below the number of content chunks is impossible; a chunk may carry
  several tokens (multi-token prediction, speculative decoding, a server's
  stream interval), so usage above it is allowed up to ``max_tokens`` and,
  where a limit is given, ``max_tokens_per_chunk`` per chunk.

A request that fails either is a failed request of kind ``usage`` with the
reason (the decoder applies both; the verdict's usage cross-check applies the
per-chunk limit, which is a validity setting).
"""

from __future__ import annotations

from typing import Any, TypeGuard

from inferx_core.load.records.request import RequestRecord

__all__ = ["is_token_count", "usage_disagreement", "usage_value_problem"]


def is_token_count(value: Any) -> TypeGuard[int]:
    """True for a non-negative int (a bool is not a count, though Python calls it an int).
    A TypeGuard: after ``if is_token_count(x)`` a type checker knows ``x`` is an int."""
    return type(value) is int and value >= 0


def usage_value_problem(field: str, value: Any) -> str | None:
    """Why ``usage.<field>`` = ``value`` cannot be a token count, else None (None is absent)."""
    if value is None or is_token_count(value):
        return None
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return (
        f"the server's usage.{field} is {shown} ({type(value).__name__}), not a non-negative "
        "integer: its token counts cannot be used"
    )


def usage_disagreement(rec: RequestRecord, max_tokens_per_chunk: float | None = None) -> str | None:
    """Why a reply's reported completion tokens disagree with its stream, else None.

    Judged only for a reply with content and a usage count; ``max_tokens_per_chunk``
    None leaves the per-chunk ceiling unchecked (``max_tokens`` still applies).
    """
    usage = rec.usage_output_tokens
    chunks = len(rec.chunk_ns)
    if usage is None or not chunks:
        return None
    if not is_token_count(usage):
        return usage_value_problem("completion_tokens", usage)
    who = f"request {rec.request_id}: usage says {usage} completion tokens"
    if usage < chunks:
        return (
            f"{who}, but {chunks} content chunks were streamed, each with at least one "
            "token (the server's usage undercounts)"
        )
    if rec.max_tokens and usage > rec.max_tokens:
        return f"{who}, max_tokens was {rec.max_tokens}"
    if max_tokens_per_chunk is not None and usage > max_tokens_per_chunk * chunks:
        return f"{who} after {chunks} content chunks (more than {max_tokens_per_chunk:g} per chunk)"
    return None
