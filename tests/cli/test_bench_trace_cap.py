"""``--max-concurrency`` beside ``--trace`` on the command line caps the replay, as the docs
say (docs/workloads.md) and as ``load.max_concurrency`` does in a config (issue 39: the flag
was refused as an open-loop flag without --request-rate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizer_fixtures import train_tokenizer

from inferx_core.cli.app import main
from inferx_core.results.model import parse_result
from inferx_core.testing import ServerProcess


def _burst(path: Path) -> Path:
    rows = [{"timestamp": 0, "input_length": 40, "output_length": 4, "hash_ids": [k]}
            for k in range(6)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_max_concurrency_with_a_trace_caps_the_replay_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokenizer = tmp_path / "tokenizer.json"
    train_tokenizer().save(str(tokenizer))
    out = tmp_path / "out"
    with ServerProcess(ttft_ms=30) as slow:
        code = main(
            ["bench", "--base-url", slow.base_url, "--trace", str(_burst(tmp_path / "b.jsonl")),
             "--trace-format", "mooncake", "--tokenizer", str(tokenizer),
             "--max-concurrency", "2", "--output", str(out), "--no-progress", "--no-telemetry"]
        )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    [path] = [p for p in out.glob("*.json") if not p.name.endswith(".telemetry.json")]
    result = parse_result(json.loads(path.read_text()))
    assert result.point_id.endswith("-replay-cap2")
    assert result.identity.max_concurrency == 2 and result.load.completed == 6  # type: ignore[union-attr]


def test_the_other_open_loop_flags_are_still_refused_beside_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "--base-url", "http://127.0.0.1:9", "--trace", str(tmp_path / "t"),
                 "--burstiness", "2", "--no-progress"])  # fmt: skip
    assert code == 2 and "--burstiness applies to an open loop only" in capsys.readouterr().err
