"""Data files' JSON (dataset lines, JSON datasets, Mooncake and InferX session traces)
is read with the strict parser's refusals (issue 27, section 4): a line nested
thousands deep, NaN/Infinity or an integer of thousands of digits is one error naming
the file and the line, never a RecursionError traceback; long prompts stay readable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_core.cli.app import main
from inferx_core.load.prompts.dataset import DatasetError, load_jsonl_dataset
from inferx_core.load.prompts.dataset_formats import ColumnMap, load_dataset
from inferx_core.load.prompts.session_trace import SessionTraceError, read_session_trace
from inferx_core.load.prompts.traces import TraceError, read_mooncake

DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE = {
    "deep": (DEEP, "nested too deep"),
    "nan": ('{"prompt": "hi", "x": NaN}', "NaN is not a number"),
    "infinity": ('{"prompt": "hi", "x": -Infinity}', "-Infinity is not a number"),
    "digits": ('{"prompt": "hi", "x": ' + "9" * 5000 + "}", "thousands of digits"),
}


def two_lines(path: Path, bad: str) -> Path:
    path.write_text('{"prompt": "fine"}\n' + bad + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_dataset_line_names_file_and_line(tmp_path: Path, kind: str) -> None:
    bad, reason = HOSTILE[kind]
    path = two_lines(tmp_path / "d.jsonl", bad)
    with pytest.raises(DatasetError, match=f"{path}:2: .*{reason}"):
        load_jsonl_dataset(path)
    with pytest.raises(DatasetError, match=f"{path}:2: .*{reason}"):
        load_dataset(path, ColumnMap(prompt="prompt"))


def test_a_json_dataset_nested_thousands_deep_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(DEEP, encoding="utf-8")
    with pytest.raises(DatasetError, match="nested too deep"):
        load_dataset(path)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_trace_line_names_file_and_line(tmp_path: Path, kind: str) -> None:
    bad, reason = HOSTILE[kind]
    mooncake = tmp_path / "m.jsonl"
    mooncake.write_text(
        '{"timestamp": 0, "input_length": 4, "output_length": 2}\n' + bad + "\n", "utf-8"
    )
    with pytest.raises(TraceError, match=f"{mooncake}:2: .*{reason}"):
        read_mooncake(mooncake)
    sessions = tmp_path / "s.jsonl"
    sessions.write_text(bad + "\n", encoding="utf-8")
    with pytest.raises(SessionTraceError, match=f"{sessions}:1: .*{reason}"):
        read_session_trace(sessions)


def test_a_long_prompt_is_not_a_config_string(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "' + "x" * 200_000 + '"}\n', encoding="utf-8")
    assert len(load_jsonl_dataset(path)) == 1


def test_bench_prints_one_line_for_a_deep_dataset_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = two_lines(tmp_path / "d.jsonl", DEEP)
    argv = [
        "bench",
        "--base-url",
        "http://127.0.0.1:9",
        "--no-progress",
        "--no-telemetry",
        "--dataset",
        str(path),
        "--output",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RecursionError" not in err
    assert len(err.strip().splitlines()) == 1 and f"{path}:2:" in err
