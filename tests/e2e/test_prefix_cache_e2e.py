"""Prefix caching proved on the real engine: a shared-prefix workload on vLLM CPU with
prefix caching on and off, and the hit rate InferX reports from the engine's counters."""

from __future__ import annotations

import pytest

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.demo.run import demo_config
from inferx_core.pipeline.server.run import run_configs

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def runs(engine_python, tmp_path_factory: pytest.TempPathFactory):
    python = engine_python
    root = tmp_path_factory.mktemp("prefix-cache")
    out: dict[bool, object] = {}
    for caching in (True, False):
        base = demo_config(
            output_dir=root / f"results-{caching}", engine_python=str(python),
            concurrency=[1], model_dir=root / "model",
        )  # fmt: skip
        config = base.model_copy(
            update={
                "name": f"cache-{'on' if caching else 'off'}",
                "prefix_caching": caching,
                "workload": Workload(
                    isl=320,
                    osl=8,
                    range_semantics="fixed",
                    shared_prefix=256,
                    tokenizer=base.workload.tokenizer,
                ),
                "load": LoadProfile(concurrency=[1], num_prompts=12),
                "telemetry_intervals": {"host": 0.5, "engine_metrics": 0.05},
            }
        )
        [outcome] = run_configs([config], progress=False).outcomes
        out[caching] = outcome
    return out


def hit_rate(outcome) -> float | None:
    rate = outcome.result.flat()["engine_metrics"].get("prefix_cache_hit_rate") or {}
    return rate.get("value")


def test_prefix_caching_on_hits_the_shared_prefix(runs) -> None:
    on = hit_rate(runs[True])
    # 256 of every 320 prompt tokens are shared: after the first request they hit
    assert on is not None and on > 0.5, runs[True].result.flat()["engine_metrics"]


def test_prefix_caching_off_hits_nothing(runs) -> None:
    off = hit_rate(runs[False])
    assert off is None or off < 0.05, runs[False].result.flat()["engine_metrics"]
    assert "--no-enable-prefix-caching" in runs[False].result.flat()["launch"]["spec"]["argv"]
