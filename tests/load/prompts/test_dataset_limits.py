"""Dataset lines are read one at a time and bounded (issue 27, section 4).

A 100 MB line is an error naming the file, the line, its size, the limit and
the fix, found without holding the line (its rest is counted in chunks), not a
tokenizer timeout after minutes. The limit is ``workload.dataset_max_line_bytes``
(``--dataset-max-line-bytes``, 16 MiB by default); formats read whole (JSON
arrays, ShareGPT, Parquet) bound each record's prompt text the same way.
"""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.config.bounds import DATASET_LINE_BYTES
from inferx_core.load.prompts.dataset import DatasetError, jsonl_lines, load_jsonl_dataset
from inferx_core.load.prompts.dataset_formats import ColumnMap, load_dataset

MiB = 2**20


def prompt_line(n_bytes: int) -> bytes:
    """One JSONL record of exactly ``n_bytes`` bytes (no newline)."""
    frame = len(b'{"prompt": ""}')
    return b'{"prompt": "' + b"x" * (n_bytes - frame) + b'"}'


def write_dataset(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def test_a_line_over_the_limit_names_file_line_size_limit_and_fix(tmp_path: Path) -> None:
    big = 4 * MiB + 123
    path = write_dataset(tmp_path / "d.jsonl", [prompt_line(40), prompt_line(50), prompt_line(big)])
    tracemalloc.start()
    try:
        with pytest.raises(DatasetError) as exc:
            load_jsonl_dataset(path, max_line_bytes=MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(exc.value)
    assert message.startswith(f"{path}:3: ")
    assert f"{big:,} bytes" in message and f"{MiB:,} bytes" in message
    assert "dataset_max_line_bytes" in message and "--dataset-max-line-bytes" in message
    assert peak < 2.5 * MiB  # the limit plus one chunk: the 4 MiB line is never held


def test_a_100_mb_line_is_refused_with_the_default_limit_in_bounded_memory(
    tmp_path: Path,
) -> None:
    size = 100 * 10**6
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as f:  # written in pieces: the test holds no 100 MB either
        f.write(prompt_line(30) + b"\n" + b'{"prompt": "')
        for _ in range(100):
            f.write(b"y" * (size // 100))
        f.write(b'"}\n')
    line_size = len(b'{"prompt": "') + size + len(b'"}')
    tracemalloc.start()
    try:
        with pytest.raises(DatasetError) as exc:
            load_dataset(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert re.match(rf"{re.escape(str(path))}:2: the line is {line_size:,} bytes", str(exc.value))
    assert peak < DATASET_LINE_BYTES + 4 * MiB


def test_bench_refuses_the_line_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_dataset(tmp_path / "d.jsonl", [prompt_line(64), prompt_line(3 * MiB)])
    argv = ["bench", "--base-url", "http://127.0.0.1:9", "--no-progress", "--no-telemetry",
            "--dataset", str(path), "--dataset-max-line-bytes", str(MiB),
            "--output", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 2  # no server listens: the dataset was refused before any request
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"{path}:2: the line is" in err


def test_validate_reads_the_limit_from_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_dataset(tmp_path / "d.jsonl", [prompt_line(3000)])
    config = tmp_path / "bench.yaml"
    config.write_text(
        f"base_url: http://127.0.0.1:9\nworkload: {{dataset: {path}, "
        "dataset_max_line_bytes: 2048}\n"
    )
    assert main(["validate", str(config)]) == 2
    assert f"{path}:1: the line is 3,000 bytes" in capsys.readouterr().err
    config.write_text(f"base_url: http://127.0.0.1:9\nworkload: {{dataset: {path}}}\n")
    assert main(["validate", str(config)]) == 0  # the default limit takes it


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(16, 3000), min_size=1, max_size=6),
    limit=st.integers(16, 2048),
    crlf=st.booleans(),
)
def test_lines_up_to_the_limit_are_read_whole_and_the_first_over_it_is_named(
    sizes: list[int], limit: int, crlf: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("lines") / "d.jsonl"
    lines = [prompt_line(n) for n in sizes]
    path.write_bytes(b"".join(line + (b"\r\n" if crlf else b"\n") for line in lines))
    over = next((i for i, n in enumerate(sizes) if n + crlf > limit), None)
    if over is None:
        assert [text.encode() for _, text in jsonl_lines(path, limit)] == lines
        return
    with pytest.raises(DatasetError) as exc:
        list(jsonl_lines(path, limit))
    assert str(exc.value).startswith(f"{path}:{over + 1}: the line is {sizes[over] + crlf:,} ")


def test_lines_end_at_newlines_only_and_bad_utf8_names_its_line(tmp_path: Path) -> None:
    # U+2028 is valid unescaped inside a JSON string: it does not end the record
    text = json.dumps({"prompt": "a\u2028b\x1cc"}, ensure_ascii=False).encode()
    path = write_dataset(tmp_path / "d.jsonl", [b"\xef\xbb\xbf" + prompt_line(20), text])
    assert [r.prompt for r in load_jsonl_dataset(path)] == ["x" * 6, "a\u2028b\x1cc"]
    bad = write_dataset(tmp_path / "bad.jsonl", [prompt_line(20), b'{"prompt": "\xff"}'])
    with pytest.raises(DatasetError, match=r"bad\.jsonl:2: not UTF-8 text"):
        load_jsonl_dataset(bad)


def test_formats_read_whole_bound_each_records_prompt(tmp_path: Path) -> None:
    array = tmp_path / "d.json"
    array.write_text(json.dumps([{"prompt": "short"}, {"prompt": "z" * 5000}]))
    with pytest.raises(DatasetError, match=r"d\.json:2: its prompt text is 5,000 bytes"):
        load_dataset(array, max_line_bytes=4096)
    sharegpt = tmp_path / "sg.json"
    turns = [{"from": "human", "value": "é" * 3000}, {"from": "gpt", "value": "ok"}]
    sharegpt.write_text(json.dumps([{"conversations": turns}]))
    with pytest.raises(DatasetError, match=r"sg\.json:1: its prompt text is 6,000 bytes"):
        load_dataset(sharegpt, max_line_bytes=4096)
    assert len(load_dataset(sharegpt).records) == 1


def test_column_mapped_jsonl_is_read_the_same_way(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "d.jsonl", [b'{"q": "hello"}', b"{not json"])
    with pytest.raises(DatasetError, match=r"d\.jsonl:2: invalid JSON"):
        load_dataset(path, ColumnMap(prompt="q"))
    path = write_dataset(
        tmp_path / "d.jsonl", [b'{"q": "hello"}', b'{"q": "' + b"w" * 5000 + b'"}']
    )
    with pytest.raises(DatasetError, match=r"d\.jsonl:2: the line is 5,009 bytes"):
        load_dataset(path, ColumnMap(prompt="q"), max_line_bytes=4096)
