"""Datasets in the field's formats: ShareGPT, JSON arrays, Parquet and HF save_to_disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from inferx_core.load.prompts.dataset import DatasetError
from inferx_core.load.prompts.dataset_formats import ColumnMap, load_dataset
from inferx_core.load.prompts.prompt_set import WorkloadSpec, build_prompt_set
from inferx_core.load.tokens.tokenizer import LocalTokenizer


@pytest.fixture(scope="session")
def local(hf_tok: Any) -> LocalTokenizer:
    return LocalTokenizer(hf_tok, "test-bpe")


SHAREGPT = [
    {"id": "a", "conversations": [{"from": "human", "value": "What is the capital of France?"},
                                  {"from": "gpt", "value": "Paris is the capital of France."}]},
    {"id": "b", "conversations": [{"from": "gpt", "value": "a reply with no question"}]},
    {"id": "c", "conversations": [{"from": "human", "value": "Name three colors."},
                                  {"from": "gpt", "value": "Red, green and blue."},
                                  {"from": "human", "value": "More?"}]},
]  # fmt: skip


def test_sharegpt_prompt_is_the_first_human_turn_output_the_reply(
    tmp_path: Path, local: LocalTokenizer, hf_tok: Any
) -> None:
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(SHAREGPT))
    loaded = load_dataset(path)
    assert [r.prompt for r in loaded.records] == [
        "What is the capital of France?",
        "Name three colors.",
    ]
    assert loaded.skipped == 1 and "without a human turn" in loaded.reason
    spec = WorkloadSpec(kind="dataset", dataset_path=str(path), osl=99)
    w = build_prompt_set(spec, local, 2, seed=0)
    # vLLM's rule: the reference reply's token count is the output length
    reply = len(hf_tok.encode("Paris is the capital of France.", add_special_tokens=True).ids)
    assert w[0].max_tokens == reply and w[0].max_tokens != 99
    assert any("skipped 1 conversation" in n for n in w.notes)


def test_parquet_with_a_column_mapping(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"question": ["q one", "q two"], "n": [5, 7]}), path)
    loaded = load_dataset(path, ColumnMap(prompt="question", output_len="n"))
    assert [(r.prompt, r.output_len) for r in loaded.records] == [("q one", 5), ("q two", 7)]
    with pytest.raises(DatasetError, match="'prompt' must be a non-empty string"):
        load_dataset(path, ColumnMap(prompt="missing"))


def test_hf_save_to_disk_folder(tmp_path: Path) -> None:
    folder = tmp_path / "hf"
    folder.mkdir()
    table = pa.table({"messages": [[{"role": "user", "content": "hello"}]], "len": [3]})
    arrow = str(folder / "data-00000-of-00001.arrow")
    with pa.OSFile(arrow, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)  # HF datasets' on-disk format: an Arrow IPC stream
    loaded = load_dataset(folder, ColumnMap(prompt=None, messages="messages", output_len="len"))
    assert loaded.records[0].prompt == [{"role": "user", "content": "hello"}]
    assert loaded.records[0].output_len == 3


def test_a_json_array_of_inferx_records(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps([{"prompt": "hi", "output_len": 4}]))
    assert load_dataset(path).records[0].output_len == 4
    path.write_text(json.dumps({"prompt": "hi"}))
    with pytest.raises(DatasetError, match="an array of records"):
        load_dataset(path)
