"""JSONL datasets: reading and checking the prompts a ``dataset`` workload sends.

Each line is ``{"prompt": "...", "output_len": 128}`` or
``{"messages": [{"role": "user", "content": "..."}]}``; a bad line raises
:class:`DatasetError` naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferx_core.errors import UserFacingError

__all__ = [
    "DatasetError",
    "DatasetRecord",
    "Message",
    "bad_record",
    "load_jsonl_dataset",
    "message_texts",
    "record_from_object",
]

Message = dict[str, Any]


class DatasetError(UserFacingError, ValueError):
    """A dataset file is unusable; the message names file, line and fix."""


@dataclass(frozen=True, slots=True)
class DatasetRecord:
    """One JSONL line: a prompt string or chat messages, optional output length."""

    prompt: str | list[Message]
    output_len: int | None
    line: int


_FORMAT_HELP = (
    'each line must be a JSON object {"prompt": "...", "output_len": 128} '
    'or {"messages": [{"role": "user", "content": "..."}]}'
)


def load_jsonl_dataset(path: str | Path) -> list[DatasetRecord]:
    """Read a JSONL dataset; a bad line raises :class:`DatasetError` naming it."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"{p}: cannot read dataset: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{p}: not UTF-8 text ({exc}); fix: save the file as UTF-8 JSONL"
        ) from exc
    records: list[DatasetRecord] = []
    for lineno, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        records.append(_parse_record(p, lineno, line))
    if not records:
        raise DatasetError(f"{p}: no records; fix: {_FORMAT_HELP}")
    return records


def bad_record(p: Path, lineno: int, problem: str, fix: str) -> DatasetError:
    """The error for line ``lineno`` of ``p``: what is wrong and how to fix it."""
    return DatasetError(f"{p}:{lineno}: {problem}; fix: {fix}")


def _load_json_object(p: Path, lineno: int, line: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise bad_record(
            p, lineno, f"invalid JSON ({exc.msg} at column {exc.colno})", _FORMAT_HELP
        ) from exc
    if not isinstance(obj, dict):
        raise bad_record(
            p, lineno, f"expected a JSON object, got {type(obj).__name__}", _FORMAT_HELP
        )
    return obj


def _record_prompt(p: Path, lineno: int, obj: dict[str, Any]) -> str | list[Message]:
    has_prompt, has_messages = "prompt" in obj, "messages" in obj
    if has_prompt and has_messages:
        raise bad_record(p, lineno, "has both 'prompt' and 'messages'", "keep exactly one of them")
    if not has_prompt and not has_messages:
        raise bad_record(p, lineno, "has neither 'prompt' nor 'messages'", _FORMAT_HELP)
    if not has_prompt:
        return _check_messages(p, lineno, obj["messages"])
    if not isinstance(obj["prompt"], str) or not obj["prompt"]:
        raise bad_record(
            p, lineno, "'prompt' must be a non-empty string", 'write "prompt": "your text"'
        )
    return obj["prompt"]


def _parse_record(p: Path, lineno: int, line: str) -> DatasetRecord:
    return record_from_object(p, lineno, _load_json_object(p, lineno, line))


def record_from_object(p: Path, lineno: int, obj: dict[str, Any]) -> DatasetRecord:
    """One record (``prompt``/``messages``, optional ``output_len``), checked; a bad one
    raises :class:`DatasetError` naming ``p`` and record ``lineno``."""
    prompt = _record_prompt(p, lineno, obj)
    out_len = obj.get("output_len")
    if out_len is not None and (
        isinstance(out_len, bool) or not isinstance(out_len, int) or out_len < 1
    ):
        raise bad_record(
            p,
            lineno,
            f"'output_len' must be an integer >= 1, got {out_len!r}",
            'write e.g. "output_len": 128 or omit it',
        )
    return DatasetRecord(prompt=prompt, output_len=out_len, line=lineno)


def _check_messages(p: Path, lineno: int, msgs: Any) -> list[Message]:
    fix = 'write "messages": [{"role": "user", "content": "..."}]'
    if not isinstance(msgs, list) or not msgs:
        raise bad_record(p, lineno, "'messages' must be a non-empty list", fix)
    for j, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise bad_record(p, lineno, f"messages[{j}] is not an object", fix)
        if not isinstance(m.get("role"), str) or not m["role"]:
            raise bad_record(p, lineno, f"messages[{j}] has no 'role' string", fix)
        content = m.get("content")
        if not isinstance(content, (str, list)):
            raise bad_record(
                p, lineno, f"messages[{j}] 'content' must be a string or a list of parts", fix
            )
    return msgs


def message_texts(msgs: Sequence[Message]) -> list[str]:
    """The text pieces of a message list (string contents and text parts)."""
    out: list[str] = []
    for m in msgs:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            for part in c:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    out.append(part["text"])
                elif isinstance(part, str):
                    out.append(part)
    return out
