"""JSONL datasets: reading and checking the prompts a ``dataset`` workload sends.

Each line is ``{"prompt": "...", "output_len": 128}`` or
``{"messages": [{"role": "user", "content": "..."}]}``; a bad line raises
:class:`DatasetError` naming the file, the line and the fix. Lines are read one
at a time and bounded (``workload.dataset_max_line_bytes``, 16 MiB by default):
a longer line is named with its size without ever being held in memory, not
handed to a tokenizer that takes minutes over it.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferx_core.config.bounds import DATASET_LINE_BYTES
from inferx_core.config.parsing import ParseError, loads_data_json
from inferx_core.errors import UserFacingError

__all__ = [
    "DatasetError",
    "DatasetRecord",
    "Message",
    "bad_record",
    "check_record_size",
    "check_regular_file",
    "jsonl_lines",
    "load_jsonl_dataset",
    "message_texts",
    "parse_json_line",
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


def load_jsonl_dataset(
    path: str | Path, max_line_bytes: int = DATASET_LINE_BYTES
) -> list[DatasetRecord]:
    """Read a JSONL dataset; a bad line raises :class:`DatasetError` naming it."""
    p = Path(path)
    records = [_parse_record(p, lineno, line) for lineno, line in jsonl_lines(p, max_line_bytes)]
    if not records:
        raise DatasetError(f"{p}: no records; fix: {_FORMAT_HELP}")
    return records


_CHUNK = 2**16  # lines are read in pieces this big: an over-long one is never held whole


def _size(n: int) -> str:
    return f"{n:,} bytes ({n / 2**20:.1f} MiB)"


def _too_long(p: Path, lineno: int, size: str, limit: int, what: str = "the line") -> DatasetError:
    return bad_record(
        p,
        lineno,
        f"{what} is {size}, over the limit of {_size(limit)}",
        "shorten or remove that record, or raise workload.dataset_max_line_bytes "
        "(--dataset-max-line-bytes BYTES)",
    )


def check_regular_file(p: Path) -> None:
    """A FIFO, socket or device as a dataset is refused before it is opened: opening a FIFO
    for reading waits for a writer, and ``--dataset`` of one hung a run forever."""
    try:
        mode = p.stat().st_mode
    except OSError:
        return  # the caller's open or existence check names what is wrong
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise DatasetError(
            f"{p}: not a regular file (a FIFO, socket or device); reading it could wait "
            "forever for a writer: write the records to a file and give that file"
        )


def jsonl_lines(p: Path, max_line_bytes: int = DATASET_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line of ``p``, read one line at a time (lines
    end at ``\\n`` only, as JSONL's do); a line over ``max_line_bytes`` is a
    :class:`DatasetError` with its size, counted in chunks, never held whole."""
    check_regular_file(p)
    try:
        f = p.open("rb")
    except OSError as exc:
        raise DatasetError(f"{p}: cannot read dataset: {exc.strerror or exc}") from exc
    with f:
        lineno = 0
        while (line := _next_line(f, max_line_bytes)) is not None:
            lineno += 1
            if isinstance(line, int):
                raise _too_long(p, lineno, _size(line), max_line_bytes)
            text = _decoded(p, lineno, line)
            if lineno == 1:
                text = text.removeprefix("\ufeff")  # a UTF-8 byte order mark
            if text.strip():
                yield lineno, text


def _next_line(f: Any, limit: int) -> bytes | int | None:
    """The next line without its newline; its size in bytes when over ``limit`` (the rest
    skipped unread into memory); None at the end of the file."""
    parts: list[bytes] = []
    size = 0
    while chunk := f.readline(_CHUNK):
        ends = chunk.endswith(b"\n")
        size += len(chunk) - ends
        if size > limit:
            parts.clear()
            return size if ends else size + _rest_of_line(f)
        parts.append(chunk)
        if ends:
            break
    if not parts:
        return None
    return b"".join(parts).rstrip(b"\n").removesuffix(b"\r")


def _rest_of_line(f: Any) -> int:
    """Bytes up to and excluding the next newline (or the end), skipped in chunks."""
    skipped = 0
    while chunk := f.readline(_CHUNK):
        if chunk.endswith(b"\n"):
            return skipped + len(chunk) - 1
        skipped += len(chunk)
    return skipped


def _decoded(p: Path, lineno: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad_record(
            p,
            lineno,
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            "save the file as UTF-8 JSONL",
        ) from None


def check_record_size(
    p: Path, lineno: int, prompt: str | list[Message], max_bytes: int = DATASET_LINE_BYTES
) -> None:
    """A :class:`DatasetError` when a record's prompt text is over ``max_bytes`` (formats
    read whole, JSON arrays and Parquet, have no line to bound)."""
    texts = [prompt] if isinstance(prompt, str) else message_texts(prompt)
    if sum(len(t) for t in texts) * 4 <= max_bytes:  # UTF-8: at most 4 bytes a character
        return
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    if size > max_bytes:
        raise _too_long(p, lineno, _size(size), max_bytes, "its prompt text")


def bad_record(p: Path, lineno: int, problem: str, fix: str) -> DatasetError:
    """The error for line ``lineno`` of ``p``: what is wrong and how to fix it."""
    return DatasetError(f"{p}:{lineno}: {problem}; fix: {fix}")


def parse_json_line(p: Path, lineno: int, line: str) -> dict[str, Any]:
    """Line ``lineno`` of ``p`` as a JSON object; else a :class:`DatasetError` naming it."""
    try:
        obj = loads_data_json(line)
    except ParseError as exc:
        raise bad_record(p, lineno, exc.reason, _FORMAT_HELP) from None
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
    return record_from_object(p, lineno, parse_json_line(p, lineno, line))


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
