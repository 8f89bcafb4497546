"""What a streamed chunk says, and the JSON decoders that read it.

Classification (:func:`classify_payload`, and the rules the stream decoder
inlines): which chunks carry generated content, finish reasons, usage,
errors sent inside a 200 stream.

JSON decoders: the standard library, or msgspec when installed. The stream
decoder parses one JSON object per streamed chunk, its largest per-chunk
cost; both decoders give the same records (tests/load/transport/test_sse_backends.py
checks it over generated streams):

* ``json``: the standard library's C scanner (always there).
* ``msgspec``: decodes only the fields the decoder reads (``choices[].text``,
  ``delta`` content fields, ``finish_reason``, ``usage``, ``error``,
  ``object``, ``x_sent_ns``, ``id`` and the engine's own per-request fields)
  into the structs below, skipping the rest without building it; about 2-4x
  cheaper than the standard library per chunk.

A chunk msgspec refuses (invalid UTF-8, a field of an unexpected type, an
error payload) goes to the standard-library path, which decides: so the fast
path can only agree with it, never judge differently. ``pip install
'inferx-core[fast]'`` installs msgspec (and uvloop). orjson was measured too
(benchmarks/README.md) and left out: slower than msgspec's structs here, and
it turns integers beyond 64 bits into floats where the standard library keeps
them exact.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "ChunkInfo",
    "classify_chunk",
    "classify_payload",
    "parse_json",
    "stdlib_loads",
    "typed_decoder",
]

# The top-level fields of a chunk the decoder always reads (``id``: the reply's
# own id, kept to join InferX's records with the server's logs).
_CHUNK_FIELDS = ("usage", "error", "object", "x_sent_ns", "id")

_loads = json.loads
# The C scanner behind json.loads without its wrapper (type checks, BOM and
# trailing-whitespace handling): about half the cost per small chunk.
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__


def parse_json(data: str) -> Any:
    """json.loads, faster for the common case; raises ValueError when invalid."""
    try:
        obj, end = _scan_once(data, 0)
    except StopIteration:
        return _loads(data)  # leading whitespace or invalid: let json.loads decide
    if end != len(data) and data[end:].strip():
        raise ValueError(f"extra data after JSON at {end}")
    return obj


def stdlib_loads(raw: bytes) -> Any:
    """The reference: bytes decoded as the SSE parser decodes them, then :func:`parse_json`."""
    return parse_json(raw.decode("utf-8", "replace"))


def _typed_decoder(kept: tuple[str, ...] = ()) -> Callable[[bytes], Any] | None:
    """msgspec's decoder into the chunk structs, or None without msgspec.

    ``kept``: further top-level fields to decode as they are (the engine's own
    per-request figures, hook ``inferx_engine_server_timing``); each is an
    attribute of the decoded chunk, None when absent.
    """
    try:
        import msgspec
    except ImportError:
        return None

    # Fields typed ``Any`` keep whatever JSON value came (the decoder's
    # truthiness and type checks then apply as to dicts); a ``delta`` or
    # ``choices`` of another JSON type fails validation and goes to the
    # standard-library path. gc=False: decoded data has no reference cycles.
    # (Annotations are real types here: msgspec reads them, and this module's
    # postponed annotations could not resolve names local to this function.)
    delta = msgspec.defstruct(
        "Delta",
        [(f, Any, None) for f in ("content", "reasoning_content", "reasoning", "tool_calls")],
        gc=False,
    )
    choice = msgspec.defstruct(
        "Choice",
        [("text", Any, None), ("delta", delta | None, None), ("finish_reason", Any, None)],
        gc=False,
    )
    chunk = msgspec.defstruct(
        "Chunk",
        [("choices", list[choice] | None, None)]  # type: ignore[valid-type]  # a runtime struct
        + [(f, Any, None) for f in dict.fromkeys(_CHUNK_FIELDS + kept)],
        gc=False,
    )
    return msgspec.json.Decoder(chunk).decode


#: The typed decoder with further top-level fields, built once per set of fields.
typed_decoder = functools.lru_cache(maxsize=16)(_typed_decoder)


def _backends() -> dict[str, tuple[bool, Callable[[bytes], Any]]]:
    """Name -> (typed, decode) for every decoder that imports, fastest first."""
    out: dict[str, tuple[bool, Callable[[bytes], Any]]] = {}
    typed = _typed_decoder()
    if typed is not None:
        out["msgspec"] = (True, typed)
    out["json"] = (False, stdlib_loads)
    return out


#: The decoders that import here: name -> (decodes into structs, decode(bytes)).
BACKENDS = _backends()
#: The one the stream decoder uses unless told otherwise (the fastest installed).
DEFAULT_BACKEND = next(iter(BACKENDS))


@dataclass(slots=True)
class ChunkInfo:
    """What one stream chunk means for the metrics."""

    content: bool = False  # carries generated output (counts for TTFT/ITL)
    done: bool = False  # the ``[DONE]`` sentinel
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None  # an error payload inside the stream
    malformed: bool = False


def error_message(obj: dict[str, Any]) -> str:
    err = obj.get("error")
    if isinstance(err, dict):
        msg = err.get("message") or err.get("msg") or json.dumps(err)[:300]
        code = err.get("code") or err.get("type")
        return f"{msg} ({code})" if code else str(msg)
    if err is not None:
        return str(err)[:300]
    return str(obj.get("message") or json.dumps(obj)[:300])


def _is_error(obj: dict[str, Any]) -> bool:
    return obj.get("error") is not None or obj.get("object") == "error"


def _first_choice(obj: dict[str, Any]) -> dict[str, Any] | None:
    choices = obj.get("choices")
    if choices and type(choices) is list and type(choices[0]) is dict:
        return choices[0]
    return None


def is_content(c0: dict[str, Any]) -> bool:
    """Generated output in a choice: completions ``text``; chat ``delta`` with
    ``content``, ``reasoning_content``, ``reasoning`` or ``tool_calls``."""
    if c0.get("text"):
        return True
    delta = c0.get("delta")
    return (
        type(delta) is dict
        and bool(delta)
        and bool(
            delta.get("content")
            or delta.get("reasoning_content")
            or delta.get("reasoning")
            or delta.get("tool_calls")
        )
    )


def is_reasoning_only(c0: dict[str, Any]) -> bool:
    """A content choice (``is_content``) that carries only reasoning: no completions
    ``text``, no ``delta.content`` and no ``delta.tool_calls`` (the model still thinks)."""
    if c0.get("text"):
        return False
    delta = c0.get("delta")
    return type(delta) is dict and not (delta.get("content") or delta.get("tool_calls"))


def struct_is_reasoning_only(c0: Any) -> bool:
    """``is_reasoning_only`` of a content choice decoded into a struct."""
    delta = c0.delta
    return not c0.text and delta is not None and not (delta.content or delta.tool_calls)


def reasoning_tokens_of(usage: dict[str, Any]) -> int | None:
    """``completion_tokens_details.reasoning_tokens`` (OpenAI, vLLM), else a top-level
    ``reasoning_tokens``; None when absent or not a non-negative integer."""
    details = usage.get("completion_tokens_details")
    value = details.get("reasoning_tokens") if type(details) is dict else None
    if value is None:
        value = usage.get("reasoning_tokens")
    return value if type(value) is int and value >= 0 else None


def reply_text(c0: dict[str, Any]) -> str:
    """The generated text of a content choice (completions ``text``, chat ``delta.content``)."""
    text = c0.get("text")
    if text is None:
        delta = c0.get("delta")
        text = delta.get("content") if type(delta) is dict else None
    return text if type(text) is str else ""


def struct_is_content(delta: Any) -> bool:
    """``is_content`` of a chat ``delta`` decoded into a struct (None when absent)."""
    return delta is not None and bool(
        delta.content or delta.reasoning_content or delta.reasoning or delta.tool_calls
    )


def struct_reply_text(c0: Any) -> str:
    """``reply_text`` of a choice decoded into a struct."""
    text = c0.text
    if text is None and c0.delta is not None:
        text = c0.delta.content
    return text if type(text) is str else ""


def _usage(obj: dict[str, Any]) -> dict[str, Any] | None:
    usage = obj.get("usage")
    return usage if usage and type(usage) is dict else None


def classify_payload(obj: Any) -> ChunkInfo:
    """Classify one decoded JSON chunk of a completions or chat stream.

    Content: see ``is_content`` (role-only and usage-only chunks are not).
    """
    if type(obj) is not dict:
        return ChunkInfo(malformed=True)
    if _is_error(obj):
        return ChunkInfo(error=error_message(obj))
    info = ChunkInfo()
    c0 = _first_choice(obj)
    if c0 is not None:
        info.content = is_content(c0)
        info.finish_reason = c0.get("finish_reason")
    usage = _usage(obj)
    if usage is not None:
        info.completion_tokens = usage.get("completion_tokens")
        info.prompt_tokens = usage.get("prompt_tokens")
    return info


def classify_chunk(data: str) -> ChunkInfo:
    """Classify the data of one SSE event (``[DONE]`` included)."""
    if data == "[DONE]":
        return ChunkInfo(done=True)
    try:
        obj = parse_json(data)
    except (ValueError, RecursionError):  # nested too deep to decode is malformed too
        return ChunkInfo(malformed=True)
    return classify_payload(obj)
