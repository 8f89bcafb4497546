"""A capacity search's probes are points of one server session: one ``ServerPlan``.

``inferx bench --search`` (``run_search``) and ``search:`` in ``inferx run``
(``search_on_server``) build the session's plan once and run every probe with
``measure_point``; the plan is the session's own with the search's SLOs and
percentiles (``probe_plan``). The keyword adapter ``run_point`` is gone.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import fake_engine
import pytest

import inferx_core.pipeline.point.measure as point_module
from inferx_core.config.models import BenchConfig, RunConfig
from inferx_core.config.search import SearchConfig
from inferx_core.pipeline.point.server_plan import ServerPlan
from inferx_core.pipeline.search import launched as run_search_module
from inferx_core.pipeline.search import running as search_module
from inferx_core.pipeline.search.driver import probe_percentiles
from inferx_core.pipeline.search.running import run_search
from inferx_core.pipeline.server.run import run_configs
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.testing import ServerProcess

SEARCH = {"over": "concurrency", "slo": {"ttft_ms": 50}, "max": 4, "max_probes": 3}


def spy(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[ServerPlan]:
    """Record the plan of every probe ``module`` runs through ``measure_point``."""
    plans: list[ServerPlan] = []
    real = point_module.measure_point

    def measure(plan: ServerPlan, *args: Any, **kwargs: Any) -> Any:
        plans.append(plan)
        return real(plan, *args, **kwargs)

    monkeypatch.setattr(module, "measure_point", measure)
    return plans


def assert_one_plan(plans: list[ServerPlan], levels: list[Any] | None = None) -> None:
    """One plan for every probe, but for its prompts: sized to hold its level (4 per slot)."""
    first = plans[0]
    same = ("target", "counter", "telemetry", "slo", "percentiles", "abort_check")
    for plan in plans:
        assert all(getattr(plan, k) is getattr(first, k) for k in same), "one plan"
        assert replace(plan, load=first.load) == first
    for plan, level in zip(plans, levels or (), strict=False):
        assert (plan.load.num_prompts or 0) >= 4 * level


def test_the_keyword_adapter_is_gone() -> None:
    assert not hasattr(point_module, "run_point")
    assert "run_point" not in point_module.__all__


def test_bench_search_probes_share_one_server_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans = spy(monkeypatch, search_module)
    with ServerProcess(max_concurrent=2, ttft_ms=5, itl_ms=20) as server:
        config = BenchConfig(
            base_url=server.base_url,
            workload={"isl": 16, "osl": 6},
            load={"num_prompts": 8},
            search=SEARCH,
            percentiles=[50.0, 95.0],
            num_gpus=2,
            telemetry=False,
            output_dir=tmp_path,
        )
        run = run_search(config, progress=False)
    assert len(run.outcomes) >= 2 and len(plans) >= 2
    assert_one_plan(plans, [o.result.identity.concurrency for o in run.outcomes])
    search = SearchConfig.model_validate(SEARCH)
    plan = plans[0]
    assert plan.slo == search.slo
    assert list(plan.percentiles or []) == probe_percentiles([50.0, 95.0], search)
    assert (plan.num_gpus, plan.progress, plan.target.base_url) == (2, False, config.base_url)


def test_run_search_probes_are_points_of_the_servers_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans = spy(monkeypatch, run_search_module)
    cfg = RunConfig.model_validate(
        {
            "engine": "fake",
            "model": "org/tiny-model",
            "plugin_options": {"ttft_ms": 5, "itl_ms": 20, "max_concurrent": 2},
            "readiness_timeout_s": 30,
            "stop_grace_s": 5,
            "workload": {"isl": 16, "osl": 6},
            "load": {"num_prompts": 8},
            "search": SEARCH,
        }
    )
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    summary = run_configs([cfg], pm=pm, platform=Platform(), output_dir=tmp_path, progress=False)
    assert len(summary.searches) == 1 and len(plans) >= 2
    assert_one_plan(plans)
    plan = plans[0]
    # the session's watchdog and failure naming, with the search's SLOs and percentiles
    assert plan.abort_check is not None and plan.failure_details is not None
    search = SearchConfig.model_validate(SEARCH)
    assert plan.slo == search.slo
    assert list(plan.percentiles or []) == probe_percentiles([50.0, 90.0, 99.0, 99.9], search)
    assert plan.num_gpus is None and plan.num_gpus_reason  # the fake engine uses no GPU


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERX_CACHE_DIR", str(tmp_path / "cache"))
