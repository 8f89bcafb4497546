"""The OpenAI-compatible request bodies InferX streams: completions and chat.

Built once per request before the load starts (the scheduler sends bytes), so
both the prompt builders (sessions, prepared requests) and the transport reach
them going down.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

COMPLETIONS_PATH = "/v1/completions"
CHAT_PATH = "/v1/chat/completions"


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _base_body(
    model: str,
    max_tokens: int,
    ignore_eos: bool,
    temperature: float,
    include_usage: bool,
    continuous_usage: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": True,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
        if continuous_usage:
            # vLLM then reports usage on every chunk: tokens per chunk, per-token ITL.
            body["stream_options"]["continuous_usage_stats"] = True
    if ignore_eos:
        # Forces the output length (vLLM, SGLang, TRT-LLM, llama.cpp accept it).
        body["ignore_eos"] = True
    return body


def build_completions_payload(
    model: str,
    prompt: str | Sequence[int],
    max_tokens: int,
    *,
    ignore_eos: bool = True,
    temperature: float = 0.0,
    include_usage: bool = True,
    continuous_usage: bool = False,
    extra_body: Mapping[str, Any] | None = None,
) -> bytes:
    """JSON body for a streamed ``/v1/completions`` request.

    ``prompt`` may be text or a list of token ids. ``extra_body`` keys are
    added last and override the defaults.
    """
    body = _base_body(model, max_tokens, ignore_eos, temperature, include_usage, continuous_usage)
    body["prompt"] = prompt if isinstance(prompt, str) else list(prompt)
    if extra_body:
        body.update(extra_body)
    return _json_bytes(body)


def build_chat_payload(
    model: str,
    messages: str | Sequence[Mapping[str, Any]],
    max_tokens: int,
    *,
    ignore_eos: bool = True,
    temperature: float = 0.0,
    include_usage: bool = True,
    continuous_usage: bool = False,
    extra_body: Mapping[str, Any] | None = None,
) -> bytes:
    """JSON body for a streamed ``/v1/chat/completions`` request.

    A plain string becomes one user message.
    """
    body = _base_body(model, max_tokens, ignore_eos, temperature, include_usage, continuous_usage)
    if isinstance(messages, str):
        body["messages"] = [{"role": "user", "content": messages}]
    else:
        body["messages"] = [dict(m) for m in messages]
    if extra_body:
        body.update(extra_body)
    return _json_bytes(body)
