"""Dataset files beyond InferX's JSONL: ShareGPT JSON, JSON arrays, Parquet, HF ``save_to_disk``.

Every format becomes the same :class:`~inferx_core.load.prompts.dataset.DatasetRecord`
list, so lengths are still measured with the model's tokenizer:

- ShareGPT (``[{"conversations": [{"from": "human", "value": ...}, {"from": "gpt",
  ...}]}]``, vLLM's ``sharegpt`` dataset): the first human turn is the prompt,
  the following gpt turn's token count its output length (vLLM's rule),
  conversations with fewer than two turns are skipped and counted;
- a JSON array of InferX records (``prompt``/``messages``, ``output_len``);
- Parquet, JSON/JSONL or an HF ``datasets.save_to_disk`` folder with a
  column mapping (``prompt_column`` or ``messages_column``, optional
  ``output_len_column``), read with pyarrow (``inferx-core[parquet]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferx_core.config.bounds import DATASET_LINE_BYTES
from inferx_core.config.parsing import ParseError, loads_data_json
from inferx_core.load.prompts.dataset import (
    DatasetError,
    DatasetRecord,
    check_record_size,
    check_regular_file,
    jsonl_lines,
    load_jsonl_dataset,
    parse_json_line,
    record_from_object,
)

_SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant"}


@dataclass(frozen=True)
class ColumnMap:
    prompt: str | None = "prompt"
    messages: str | None = None
    output_len: str | None = "output_len"


@dataclass
class LoadedDataset:
    records: list[DatasetRecord]
    skipped: int = 0
    reason: str | None = None
    # ShareGPT: the reference reply per record; its token count is the output length
    reference_outputs: list[str | None] | None = None


def _sharegpt(rows: list[Any], path: Path, max_bytes: int) -> LoadedDataset:
    records: list[DatasetRecord] = []
    outputs: list[str | None] = []
    skipped = 0
    for i, row in enumerate(rows, start=1):
        turns = row.get("conversations") if isinstance(row, Mapping) else None
        if not isinstance(turns, list):
            raise DatasetError(f"{path}: record {i} has no 'conversations' list (ShareGPT)")
        pair = [t for t in turns if isinstance(t, Mapping) and isinstance(t.get("value"), str)]
        if len(pair) < 2 or _SHAREGPT_ROLES.get(str(pair[0].get("from"))) != "user":
            skipped += 1
            continue
        if not pair[0]["value"].strip():
            skipped += 1
            continue
        check_record_size(path, i, pair[0]["value"], max_bytes)
        records.append(DatasetRecord(prompt=pair[0]["value"], output_len=None, line=i))
        outputs.append(pair[1]["value"])
    if not records:
        raise DatasetError(f"{path}: no ShareGPT conversation with a human turn and a reply")
    why = f"{skipped} conversation(s) without a human turn and a reply" if skipped else None
    return LoadedDataset(records, skipped, why, outputs)


def _from_rows(
    rows: Iterable[Mapping[str, Any]], path: Path, cols: ColumnMap, max_bytes: int
) -> LoadedDataset:
    records = []
    for i, row in enumerate(rows, start=1):
        obj: dict[str, Any] = {}
        if cols.messages:
            obj["messages"] = row.get(cols.messages)
        else:
            obj["prompt"] = row.get(cols.prompt or "prompt")
        if cols.output_len and row.get(cols.output_len) is not None:
            obj["output_len"] = _integral(row[cols.output_len])
        record = record_from_object(path, i, obj)
        check_record_size(path, i, record.prompt, max_bytes)
        records.append(record)
    if not records:
        raise DatasetError(f"{path}: no rows")
    return LoadedDataset(records)


def _integral(value: Any) -> Any:
    """A column value as an int when it is one (128, 128.0, "128"); else as it is, for the
    record check to refuse with its message."""
    try:
        return int(value) if not isinstance(value, bool) and float(value).is_integer() else value
    except (TypeError, ValueError):
        return value


def _arrow_rows(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.dataset as pads
    except ImportError:
        raise DatasetError(
            f"{path}: reading Parquet/HF datasets needs pyarrow: pip install 'inferx-core[parquet]'"
        ) from None
    if path.is_dir():  # HF save_to_disk: data-*.arrow files (Arrow IPC streams)
        files = sorted(path.glob("*.arrow"))
        if not files:
            raise DatasetError(f"{path}: a folder without .arrow files (HF save_to_disk)")
        import pyarrow as pa

        rows: list[dict[str, Any]] = []
        for f in files:
            with pa.memory_map(str(f)) as source:
                rows += pa.ipc.open_stream(source).read_all().to_pylist()
        return rows
    return pads.dataset(str(path), format="parquet").to_table().to_pylist()


def load_dataset(
    path: str | Path, cols: ColumnMap | None = None, max_line_bytes: int = DATASET_LINE_BYTES
) -> LoadedDataset:
    """The records of any supported dataset file (see the module doc); a JSONL line, or a
    record's prompt text, over ``max_line_bytes`` is a :class:`DatasetError` naming it."""
    p = Path(path)
    cols = cols or ColumnMap()
    if not p.exists():
        raise DatasetError(
            f"{p}: no such dataset file or folder (relative paths start at the current "
            f"directory, {Path.cwd()})"
        )
    check_regular_file(p)  # a FIFO would block the open below forever
    if p.is_dir() or p.suffix == ".parquet":
        return _from_rows(_arrow_rows(p), p, cols, max_line_bytes)
    if p.suffix == ".json":
        try:
            data = loads_data_json(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ParseError) as exc:
            raise DatasetError(f"{p}: not a readable JSON file ({exc})") from None
        if not isinstance(data, list):
            raise DatasetError(f"{p}: a JSON dataset is an array of records")
        if data and isinstance(data[0], Mapping) and "conversations" in data[0]:
            return _sharegpt(data, p, max_line_bytes)
        return _from_rows(data, p, cols, max_line_bytes)
    if cols != ColumnMap():
        rows = [parse_json_line(p, n, line) for n, line in jsonl_lines(p, max_line_bytes)]
        return _from_rows(rows, p, cols, max_line_bytes)
    return LoadedDataset(load_jsonl_dataset(p, max_line_bytes))
