"""How an engine's tokenizer endpoint is spoken: the answer of ``inferx_engine_tokenize_endpoints``.

InferX counts prompt tokens with the engine's own tokenizer when the engine
serves one over HTTP (the truth: what the engine will count). Engines spell
that endpoint differently (vLLM: ``POST /tokenize {"model", "prompt",
"add_special_tokens"} -> {"tokens", "count", "max_model_len"}``; llama.cpp:
``POST /tokenize {"content", "add_special"} -> {"tokens"}``), so the core
knows none of them: each engine plugin describes its own with a
:class:`TokenizeEndpoint`, and the core's server tokenizer only follows the
description.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["TokenizeEndpoint"]


class TokenizeEndpoint(BaseModel):
    """One tokenize (and optional detokenize) endpoint of an engine's HTTP server.

    The core sends ``POST path`` (relative to the server's root, without
    ``/v1`` unless the route has it) with the JSON body ``{text_field: TEXT,
    add_special_field: BOOL, model_field: SERVED_NAME, **extra_body}`` (a
    field set to None is left out) and reads the token ids from
    ``reply[tokens_field]``: a list of ints, or of objects holding the id
    under ``token_id_field``. ``reply[max_model_len_field]`` (an int), when
    named, is the context length the engine serves. Detokenizing (optional;
    the prompt builders that edit token ids need it) is ``POST
    detokenize_path {detokenize_tokens_field: IDS, model_field: SERVED_NAME}``
    and the text is the first of ``detokenize_text_fields`` in the reply.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Shown in the token source (e.g. 'vllm')")
    path: str = Field(description="Tokenize route, POST, from the server root: '/tokenize'")
    text_field: str = Field(min_length=1, description="Request field carrying the text")
    add_special_field: str | None = Field(
        default=None, description="Request field for 'add BOS/EOS'; None: not sent"
    )
    model_field: str | None = Field(
        default=None, description="Request field for the served model name; None: not sent"
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Fixed fields added to every tokenize request"
    )
    tokens_field: str = Field(default="tokens", min_length=1, description="Reply's id list")
    token_id_field: str | None = Field(
        default=None, description="When the list holds objects: the key of the id in each"
    )
    max_model_len_field: str | None = Field(
        default=None, description="Reply field with the served context length, if any"
    )
    detokenize_path: str | None = Field(
        default=None, description="Detokenize route, POST; None: the engine has none"
    )
    detokenize_tokens_field: str = Field(default="tokens", min_length=1)
    detokenize_text_fields: tuple[str, ...] = Field(
        default=(), description="Reply fields that may hold the text, tried in order"
    )

    @field_validator("path", "detokenize_path")
    @classmethod
    def _route(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"a route starts with '/': {value!r}")
        return value

    @model_validator(mode="after")
    def _detokenize_has_a_reply(self) -> TokenizeEndpoint:
        if self.detokenize_path is not None and not self.detokenize_text_fields:
            raise ValueError("detokenize_path needs detokenize_text_fields (where the text is)")
        return self

    @property
    def can_detokenize(self) -> bool:
        """Whether the engine has a detokenize route at all."""
        return self.detokenize_path is not None

    def tokenize_body(self, text: str, add_special: bool, model: str | None) -> dict[str, Any]:
        """The JSON body of one tokenize request."""
        body: dict[str, Any] = {**self.extra_body, self.text_field: text}
        if self.add_special_field is not None:
            body[self.add_special_field] = add_special
        if self.model_field is not None and model:
            body[self.model_field] = model
        return body

    def detokenize_body(self, ids: list[int], model: str | None) -> dict[str, Any]:
        """The JSON body of one detokenize request."""
        body: dict[str, Any] = {self.detokenize_tokens_field: ids}
        if self.model_field is not None and model:
            body[self.model_field] = model
        return body
