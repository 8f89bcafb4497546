"""Multi-turn sessions proved on the real engine: on vLLM CPU with prefix caching on, turns
after the first reuse the conversation's cached prefix (the hit rate InferX reports from the
engine's counters), and the result has per-turn figures."""

from __future__ import annotations

import pytest

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.demo.run import demo_config
from inferx_core.pipeline.server.run import run_configs

pytestmark = pytest.mark.engine

TURNS = 3


@pytest.fixture(scope="module")
def outcome(engine_python, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("multi-turn")
    base = demo_config(
        output_dir=root / "results", engine_python=str(engine_python), concurrency=[2],
        model_dir=root / "model",
    )  # fmt: skip
    config = base.model_copy(
        update={
            "name": "multi-turn",
            "prefix_caching": True,
            "workload": Workload(
                kind="multi-turn",
                turns=TURNS,
                turn_isl=128,
                turn_osl=16,
                think_time_s=0.1,
                tokenizer=base.workload.tokenizer,
            ),
            "load": LoadProfile(concurrency=[2], num_prompts=4),
            "telemetry_intervals": {"host": 0.5, "engine_metrics": 0.05},
        }
    )
    [out] = run_configs([config], progress=False).outcomes
    return out


def test_later_turns_hit_the_prefix_cache(outcome) -> None:
    flat = outcome.result.flat()
    rate = (flat["engine_metrics"].get("prefix_cache_hit_rate") or {}).get("value")
    print(f"multi-turn prefix cache hit rate over the window: {rate}")
    # sessions share nothing, so every hit is a later turn reusing its own conversation:
    # about half of all prompt tokens over the three turns
    assert rate is not None and rate > 0.25, flat["engine_metrics"]


def test_every_turn_of_every_session_completed(outcome) -> None:
    result = outcome.result
    assert result.status in ("ok", "invalid"), result.failure_reason
    assert result.load.completed == 4 * TURNS
    turns = result.load.turns
    assert [t.turn for t in turns] == list(range(TURNS))
    assert all(t.completed == 4 for t in turns)
    # the conversation grows by a message and a reply per turn
    prompts = [t.mean_prompt_tokens for t in turns]
    assert prompts == sorted(prompts) and prompts[0] == 128
    sides = [r for r in outcome.records if not r.warmup]
    assert all(r.session_id is not None and r.turn is not None for r in sides)
    # the server counted the whole conversation: later turns carry far more than one message
    later = [r.usage_prompt_tokens for r in sides if r.turn == TURNS - 1]
    assert all(n is not None and n > 2 * 128 for n in later)
