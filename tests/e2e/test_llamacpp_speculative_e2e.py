"""``speculative:`` on the real llama-server: the flags the plugin maps go out, the server
takes them and serves, and the point id that says ``spec`` belongs to a server that was
asked for speculation (issue 39: the id said ``spec-ngram-n3`` and no flag went out).

ngram-simple needs no draft model, so the demo's tiny model serves it. Needs the binary
(`make llama-server`); under INFERX_REQUIRE_ENGINE=1 (make test) its absence fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_core.demo.run import demo_config
from inferx_core.pipeline.server.run import run_configs
from inferx_core.results.files import read_result

pytestmark = pytest.mark.engine


def test_an_ngram_speculative_point_runs_with_llama_servers_spec_flags(
    llama_server: Path, tmp_path: Path
) -> None:
    base = demo_config(
        output_dir=tmp_path / "out", engine="llamacpp", concurrency=[2], isl=40, osl=64,
        num_prompts=4, model_dir=tmp_path / "model",
    )  # fmt: skip
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 2}
    data = {**base.model_dump(), "name": "spec", "max_num_seqs": None, "speculative": spec}
    config = type(base).model_validate(data)
    [outcome] = run_configs([config], progress=False).outcomes
    assert "-spec-ngram-n3-" in outcome.point_id
    [path] = [p for p in (tmp_path / "out").glob("*.json") if p.stem == outcome.point_id]
    result = read_result(path)
    assert result.load is not None and result.load.completed == 4, result.failure_reason
    argv = json.dumps(result.provenance.launch)
    assert '"--spec-type", "ngram-simple"' in argv and '"--spec-ngram-simple-size-m", "3"' in argv
    # llama-server's own counters, read from the written file: figures within their bounds
    # (measured here: acceptance 0.62, mean length 2.58 over ~85 verification steps)
    assert result.telemetry is not None
    spec = result.telemetry.engine_metrics["spec_decode"]
    assert spec["source"] == "counters" and spec["out_of_bounds"] == {}
    assert spec["drafts"] > 0
    assert 0 <= spec["acceptance_rate"] <= 1 and 1 <= spec["mean_acceptance_length"] <= 4
    # llama-server writes a step's accepted tokens as separate chunks at once: those zero
    # gaps are the server's (allowed up to 1 - 1/length), not a client that read late
    assert result.validity is not None
    [coalescing] = [c for c in result.validity.checks if c.name == "chunk_coalescing"]
    assert coalescing.passed, coalescing.why
    # the server's own share (metrics/spec_gaps.py): 1 - 1/L at one token per chunk, never
    # more while no chunk is empty of tokens
    assert 0.25 <= coalescing.limit <= max(0.25, 1 - 1 / spec["mean_acceptance_length"]) + 1e-9
