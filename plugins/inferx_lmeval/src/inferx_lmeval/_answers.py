"""A reasoning model's answer, not its thinking, is what lm-eval scores.

Standard library only: the worker (run by lm-eval's interpreter, where InferX
need not be installed) imports this module from its own folder.

Where a server splits the thinking off (vLLM and SGLang with a reasoning
parser: ``message.reasoning_content`` or ``message.reasoning``),
``message.content`` is the answer and lm-eval's chat model already reads only
it. Where it does not (no reasoning parser, or the completions API, which never
splits), the thinking is inline in the text as ``<think>...</think>``:

- text up to the last closing tag is thinking, the rest the answer (this also
  covers chat templates that open the block in the prompt, so the reply has
  only the closing tag, as DeepSeek-R1's does);
- a reply that opens a block and never closes it (cut by ``max_gen_toks``)
  has no answer: it scores as an empty reply, never as its thinking;
- anything else is the answer as it is.

A reply without content (the server split the thinking and the answer never
came) is an empty answer too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_THINK_TAGS", "AnswerCounts", "answer_of", "reply_messages"]

DEFAULT_THINK_TAGS = ("<think>", "</think>")
REASONING_FIELDS = ("reasoning_content", "reasoning")


def answer_of(text: str | None, tags: tuple[str, str] = DEFAULT_THINK_TAGS) -> str:
    """The answer part of ``text`` (see the module docstring); None is an empty answer."""
    if not text:
        return ""
    start, end = tags
    if end and end in text:
        return text.rsplit(end, 1)[1].lstrip()
    if start and text.lstrip().startswith(start):
        return ""  # the thinking never ended
    return text


def reply_messages(outputs: Any) -> list[dict[str, Any]]:
    """The ``message`` (chat) or the choice itself (completions) of each choice of a response
    or a batch of them; anything malformed is skipped (lm-eval reports it itself)."""
    found: list[dict[str, Any]] = []
    for out in outputs if isinstance(outputs, list) else [outputs]:
        choices = out.get("choices") if isinstance(out, dict) else None
        for choice in choices if isinstance(choices, list) else []:
            if isinstance(choice, dict):
                message = choice.get("message")
                found.append(message if isinstance(message, dict) else choice)
    return found


@dataclass
class AnswerCounts:
    """What the answer-only reading saw, written beside lm-eval's results."""

    replies: int = 0
    with_reasoning_field: int = 0  # thinking split off by the server
    think_tags_cut: int = 0  # thinking inline in the text, cut off here
    no_answer: int = 0  # thinking, then no answer (scored as an empty reply)
    reasoning_fields: dict[str, int] = field(default_factory=dict)

    def see(self, reply: dict[str, Any], tags: tuple[str, str] = DEFAULT_THINK_TAGS) -> None:
        """Count one reply (a chat ``message`` or a completions choice)."""
        text = reply.get("content", reply.get("text"))
        text = text if isinstance(text, str) else None
        answer = answer_of(text, tags)
        split = [name for name in REASONING_FIELDS if reply.get(name)]
        for name in split:
            self.reasoning_fields[name] = self.reasoning_fields.get(name, 0) + 1
        cut = text is not None and answer != text
        self.replies += 1
        self.with_reasoning_field += bool(split)
        self.think_tags_cut += cut
        self.no_answer += bool(split or cut) and not answer.strip()

    def as_dict(self) -> dict[str, Any]:
        return {
            "replies": self.replies,
            "with_reasoning_field": self.with_reasoning_field,
            "reasoning_fields": dict(self.reasoning_fields),
            "think_tags_cut": self.think_tags_cut,
            "no_answer": self.no_answer,
        }
