"""How an engine reports its own per-request clock: the answer of ``inferx_engine_server_timing``.

A client measures TTFT from its side of the socket; the engine knows how long
the request queued and how long its prefill took. Engines say so in their
replies, each in its own spelling (vLLM 0.32 with ``--enable-per-request-metrics``:
a ``metrics`` object on the final usage chunk; llama-server: ``timings`` on the
last chunk; SGLang: ``sglext`` when the request asks for it), so the core
knows none of them: each engine plugin describes its own with a
:class:`ServerTiming`, and the stream decoder only follows the description.

The figures are durations read from one process's clock (the server's), so
comparing them with the client's durations needs no clock sync.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["SERVER_FIGURES", "ServerTiming"]

#: The figures a :class:`ServerTiming` can point at, and what each means.
SERVER_FIGURES: dict[str, str] = {
    "queue_ms": "time the request waited in the engine's queue before it was scheduled",
    "ttft_ms": "scheduled (or prompt processing started) -> first token, on the server's clock",
    "decode_ms": "first token -> last token, on the server's clock",
    "spec_drafts": "speculative verify steps (drafts) of this request",
    "spec_draft_tokens": "draft tokens proposed for this request",
    "spec_accepted_tokens": "draft tokens the target model accepted for this request",
    "cached_tokens": "prompt tokens served from the engine's prefix cache",
}


class ServerTiming(BaseModel):
    """Where an engine's reply carries its own per-request timing, and how to ask for it.

    The stream decoder keeps every top-level field named in ``reply_fields``
    of the streamed chunks as the server gave it (the last chunk carrying the
    field wins: engines put the final figures on the last chunk). Each figure
    (``queue_ms`` ... ``cached_tokens``, see :data:`SERVER_FIGURES`) is a
    dotted path into those kept fields (``"metrics.queue_time_ms"``), or None
    when the engine does not report it. ``request_body`` is added to every
    request's JSON body (a field the request sets itself wins);
    ``launch_args`` are the flags the plugin gives a server it launches
    (shown in the docs and the plan; the launch spec carries them).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Shown with the figures (e.g. 'vllm')")
    reply_fields: tuple[str, ...] = Field(
        min_length=1, description="Top-level chunk fields kept as given: ('metrics',)"
    )
    request_body: dict[str, Any] = Field(
        default_factory=dict, description="Fields added to every request body"
    )
    launch_args: tuple[str, ...] = Field(default=(), description="Flags a launched server gets")
    unclocked: str | None = Field(
        default=None,
        description="What of the client's TTFT the engine's own clock leaves out (its front "
        "end: HTTP, tokenization, hand-offs, writing the first chunk), said beside the rest",
    )
    queue_ms: str | None = None
    ttft_ms: str | None = None
    decode_ms: str | None = None
    spec_drafts: str | None = None
    spec_draft_tokens: str | None = None
    spec_accepted_tokens: str | None = None
    cached_tokens: str | None = None

    @field_validator("reply_fields")
    @classmethod
    def _plain_keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for key in value:
            if not key.isidentifier():
                raise ValueError(f"a reply field is one top-level key (a name), got {key!r}")
        return value

    @model_validator(mode="after")
    def _paths_start_at_a_kept_field(self) -> ServerTiming:
        for figure, path in self.paths().items():
            head = path.split(".", 1)[0]
            if head not in self.reply_fields or any(not p for p in path.split(".")):
                raise ValueError(
                    f"{figure} = {path!r}: a path starts at one of reply_fields "
                    f"{list(self.reply_fields)} and has no empty segment"
                )
        return self

    def paths(self) -> dict[str, str]:
        """Figure name -> dotted path, for the figures this engine reports."""
        return {name: path for name in SERVER_FIGURES if (path := getattr(self, name)) is not None}
