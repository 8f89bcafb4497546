"""Reasoning knobs of a workload: thinking on or off, and effort, sent the way each API wants.

``workload.reasoning: {thinking: false}`` sends ``chat_template_kwargs:
{enable_thinking: false}`` (vLLM and SGLang chat templates of Qwen3,
DeepSeek-V3.1, ...); ``{effort: low}`` sends ``reasoning_effort: low``
(OpenAI's field; vLLM passes it to gpt-oss's template). Both only on the chat
API: a completions prompt has no template to switch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from inferx_core.config.base import StrictModel

__all__ = ["ReasoningConfig", "reasoning_body"]


class ReasoningConfig(StrictModel):
    """``reasoning: {thinking: true, effort: high}``; None fields are not sent."""

    thinking: bool | None = Field(
        default=None, description="chat_template_kwargs.enable_thinking (None: not sent)"
    )
    effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        default=None, description="reasoning_effort (None: not sent)"
    )


def reasoning_body(reasoning: ReasoningConfig | None, api: str) -> dict[str, Any]:
    """The request-body fields for ``reasoning`` on ``api`` (``chat`` or ``completions``)."""
    if reasoning is None:
        return {}
    if api != "chat" and (reasoning.thinking is not None or reasoning.effort is not None):
        raise ValueError(
            "workload.reasoning is sent through the chat template (chat_template_kwargs, "
            "reasoning_effort): set workload.api: chat, or remove workload.reasoning"
        )
    body: dict[str, Any] = {}
    if reasoning.thinking is not None:
        body["chat_template_kwargs"] = {"enable_thinking": reasoning.thinking}
    if reasoning.effort is not None:
        body["reasoning_effort"] = reasoning.effort
    return body
