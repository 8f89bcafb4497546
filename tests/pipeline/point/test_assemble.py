"""A point is never lost to what an engine's /metrics says, and impossible figures fail it.

Real ``inferx bench`` runs against the scripted server whose /metrics is replaced
by hostile text: a KV-cache gauge of 1e308 (two readings had an infinite mean and
made the result unwritable: the point was lost), an SGLang acceptance length of
-3.5, vLLM counters whose accepted tokens outnumber the draft tokens (167%). The
result file is written every time, the impossible figure is null with its reason,
and the point is ``invalid`` by its ``spec_acceptance`` check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferx_core.cli.app import main
from inferx_core.testing import SSETestServer


class Scripted:
    """Stands in for the server's counters: /metrics answers ``text`` (its step() is a no-op)."""

    def __init__(self, text: str) -> None:
        self._text = text

    def step(self, spec_tokens: int, chunk_tokens: int) -> None:
        pass

    def text(self) -> str:
        return self._text


def bench(tmp_path: Path, metrics: Any, engine: str, capsys: Any) -> tuple[int, dict, str]:
    """The written result file (not the printed one), the exit code and what was printed;
    ``metrics``: the /metrics text, or an object answering it (``text()``, ``step()``)."""
    with SSETestServer(itl_ms=10, spec_tokens=3) as server:  # a window of several scrapes
        server.spec = Scripted(metrics) if isinstance(metrics, str) else metrics  # type: ignore[assignment]
        config = tmp_path / "bench.json"
        config.write_text(
            json.dumps(
                {
                    "base_url": server.base_url,
                    "speculative": {"method": "mtp", "num_speculative_tokens": 3},
                    "workload": {"api": "chat", "isl": 16, "osl": 12},
                    "load": {"concurrency": [2], "num_prompts": 6, "warmup": 0},
                    "telemetry_intervals": {"engine_metrics": 0.05},
                }
            )
        )
        out = tmp_path / "out"
        code = main(["bench", str(config), "--engine", engine, "--no-progress", "--output",
                     str(out)])  # fmt: skip
    (path,) = out.glob("*-c2.json")
    return code, json.loads(path.read_text()), capsys.readouterr().out


def spec_check(result: dict) -> dict:
    (check,) = [c for c in result["validity"]["checks"] if c["name"] == "spec_acceptance"]
    return check


def test_a_gauge_of_1e308_never_loses_the_point(tmp_path: Path, capsys: Any) -> None:
    text = (
        "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 1e308\n"
        "# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total 0\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
        "vllm:spec_decode_num_accepted_tokens_total 0\n"
    )
    code, result, _ = bench(tmp_path, text, "vllm", capsys)
    assert code == 0 and result["status"] in ("ok", "invalid")
    kv = result["telemetry"]["engine_metrics"]["kv_cache_usage"]
    assert kv["max"] == 1e308  # a finite reading is kept as it was read
    if kv["samples"] >= 2:  # two readings of 1e308 have no finite mean (a busy machine: one)
        assert kv["mean"] is None and "not a finite number" in kv["why"]


@pytest.mark.parametrize("reading", ["-3.5", "1e308"])
def test_an_impossible_sglang_length_is_null_and_invalidates(
    tmp_path: Path, capsys: Any, reading: str
) -> None:
    text = f"# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length {reading}\n"
    _, result, printed = bench(tmp_path, text, "sglang", capsys)
    spec = result["telemetry"]["engine_metrics"]["spec_decode"]
    assert spec["mean_acceptance_length"] is None
    assert "mean_acceptance_length" in spec["out_of_bounds"]
    check = spec_check(result)
    assert not check["passed"] and "impossible" in check["why"]
    assert result["status"] == "invalid" and "spec_acceptance" in result["failure_reason"]
    assert "out of bounds: mean_acceptance_length" in printed  # the bench's own line


def test_167_percent_is_null_and_invalidates_without_a_golden_value(
    tmp_path: Path, capsys: Any
) -> None:
    """Counters that claim 5 accepted tokens per draft of 3: rate 167%, length 6.0."""

    class Impossible(Scripted):
        def __init__(self) -> None:
            super().__init__("")
            self.drafts = 0

        def step(self, spec_tokens: int, chunk_tokens: int) -> None:
            self.drafts += 1

        def text(self) -> str:
            d = self.drafts
            name = "vllm:spec_decode_num_{}_total".format
            return "".join(
                f"# TYPE {name(k)} counter\n{name(k)} {v}\n"
                for k, v in (("drafts", d), ("draft_tokens", 3 * d), ("accepted_tokens", 5 * d))
            )

    _, result, _ = bench(tmp_path, Impossible(), "vllm", capsys)
    spec = result["telemetry"]["engine_metrics"]["spec_decode"]
    assert spec["acceptance_rate"] is None and spec["mean_acceptance_length"] is None
    assert "in [0, 1]" in spec["out_of_bounds"]["acceptance_rate"]
    assert result["status"] == "invalid" and not spec_check(result)["passed"]


def test_a_length_past_k_plus_one_is_null_in_the_file_with_the_runs_own_k(
    tmp_path: Path, capsys: Any
) -> None:
    """5 draft tokens per draft, all accepted: length 6.0, possible for k = 5, not for the
    run's k = 3; the written figure is null with the reason, not only the check."""

    class FivePerDraft(Scripted):
        def __init__(self) -> None:
            super().__init__("")
            self.drafts = 0

        def step(self, spec_tokens: int, chunk_tokens: int) -> None:
            self.drafts += 1

        def text(self) -> str:
            d = self.drafts
            name = "vllm:spec_decode_num_{}_total".format
            return "".join(
                f"# TYPE {name(k)} counter\n{name(k)} {v}\n"
                for k, v in (("drafts", d), ("draft_tokens", 5 * d), ("accepted_tokens", 5 * d))
            )

    _, result, _ = bench(tmp_path, FivePerDraft(), "vllm", capsys)
    spec = result["telemetry"]["engine_metrics"]["spec_decode"]
    assert spec["mean_acceptance_length"] is None and spec["speculative_tokens"] == 3
    assert "[1, 4] for 3" in spec["out_of_bounds"]["mean_acceptance_length"]
    assert result["status"] == "invalid" and not spec_check(result)["passed"]
