"""``search:`` in ``inferx run``: one capacity search per launched server configuration.

The fake engine is the scripted SSE server launched as an engine, with a known
capacity (``max_concurrent``: at most K generations at once, the rest wait, so
past K some requests' TTFT includes a whole ~305 ms generation while at or below
K it is ~5 ms; the 150 ms limit sits far from both, so a loaded machine moves
neither side across it: tests/scripted_search.py). The run's search must find K
exactly, its probes must be the server's points (launch provenance, search tag),
and ``inferx report`` must rank the configurations by cost at SLO.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fake_engine
import pytest
from scripted_search import OPEN_VALIDITY, SERVER, TTFT_LIMIT_MS

from inferx_core.analysis.cost import CostOptions
from inferx_core.cli.app import main
from inferx_core.config.models import RunConfig
from inferx_core.pipeline.search.driver import SearchSetupError
from inferx_core.pipeline.server.run import run_configs
from inferx_core.report import write_report
from inferx_core.results.read import load_results
from inferx_core.results.search_files import load_search_summaries
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform

SEARCH = {"over": "concurrency", "slo": {"ttft_ms": TTFT_LIMIT_MS}, "max": 32, "max_probes": 14}


def searched(name: str, capacity: int, **more: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "engine": "fake",
            "name": name,
            "model": "org/tiny-model",
            # the shared margins and opened client checks: tests/scripted_search.py
            "plugin_options": {**SERVER, "max_concurrent": capacity},
            "validity": OPEN_VALIDITY,
            "readiness_timeout_s": 30,
            "stop_grace_s": 5,
            "workload": {"isl": 16, "osl": 6},
            "load": {"num_prompts": 16},
            "search": SEARCH,
            **more,
        }
    )


def run(configs: list[RunConfig], out: Path, **kwargs: Any) -> Any:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    return run_configs(
        configs, pm=pm, platform=Platform(), output_dir=out, progress=False, **kwargs
    )


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two server configurations, capacities 2 and 5, one search each, one output folder."""
    out = tmp_path_factory.mktemp("run-search")
    seen: list[Any] = []
    summary = run([searched("small", 2), searched("big", 5)], out, on_point=seen.append)
    return {"out": out, "summary": summary, "seen": seen}


def test_the_run_searches_each_server_and_finds_its_capacity(sweep: dict[str, Any]) -> None:
    summary = sweep["summary"]
    by_server = {s.server_id: s for s in summary.searches}
    assert sorted(by_server) == ["big-tiny-model-fake-tp1", "small-tiny-model-fake-tp1"]
    for sid, capacity in (("small-tiny-model-fake-tp1", 2), ("big-tiny-model-fake-tp1", 5)):
        s = by_server[sid]
        assert (s.status, s.capacity) == ("found", capacity), s.reason
        assert s.first_fail is not None and s.first_fail.level == capacity + 1
        assert s.runs <= SEARCH["max_probes"] and "ttft" in (s.binding_slo or "")
        assert s.search_id.startswith(sid) and s.capacity_point_id.startswith(sid)
    written, skipped = load_search_summaries([sweep["out"]])
    assert sorted(written, key=str) == sorted(summary.searches, key=str) and not skipped


def test_every_probe_is_a_point_of_its_launched_server(sweep: dict[str, Any]) -> None:
    summary, out = sweep["summary"], sweep["out"]
    results = load_results([out]).results
    probed = {(s.server_id, p.level) for s in summary.searches for p in s.probes}
    assert {(r.identity.server_id, r.identity.concurrency) for r in results} == probed
    assert len(sweep["seen"]) == len(results) == len(summary.outcomes)  # each recorded once
    ids = {s.server_id: s.search_id for s in summary.searches}
    for result in results:
        flat = result.flat()
        assert flat["search"]["id"] == ids[result.identity.server_id]
        assert flat["launch"]["spec"]["engine"] == "fake"  # the run's provenance, not bench's
        assert result.status == "ok"
    assert summary.ok


def test_the_report_ranks_the_configurations_by_cost_at_slo(
    sweep: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = CostOptions(num_gpus=1, usd_per_gpu_hour={"*": 2.0})
    files = write_report([sweep["out"]], tmp_path / "report", options, plots=False)
    ranked = [(row["search_id"].split("-")[0], row["capacity"]) for row in files.search]
    assert ranked == [("big", 5), ("small", 2)]  # more capacity at SLO: cheaper tokens
    costs = [row["cost_per_mtok_total"] for row in files.search]
    assert all(c is not None for c in costs) and costs[0] < costs[1]
    assert 'id="search"' in files.html.read_text()
    argv = ["report", str(sweep["out"]), "--no-plots", "--num-gpus", "1",
            "--usd-per-gpu-hour", "2", "--output", str(tmp_path / "cli")]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Capacity at SLO" in printed
    assert printed.index("big-tiny-model") < printed.index("small-tiny-model-fake-tp1-")


def test_resume_reuses_the_probes_of_a_finished_search(
    sweep: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "again"
    first = run([searched("small", 2)], out)
    dates = {p.name: json.loads(p.read_text())["identity"]["date"] for p in out.glob("*.json")}
    again = run([searched("small", 2)], out, resume=True)
    assert [s.capacity for s in again.searches] == [2]
    assert sorted(again.skipped) == sorted(o.point_id for o in first.outcomes)
    assert {p.name: json.loads(p.read_text())["identity"]["date"]
            for p in out.glob("*.json")} == dates  # fmt: skip


@pytest.mark.parametrize(
    ("more", "needle"),
    [
        ({"load": {"num_prompts": 16, "repeats": 2}}, "drop load.repeats"),
        # a sweep's matrix.concurrency lands in load.concurrency: the search has its own
        ({"load": {"num_prompts": 16, "concurrency": [4, 8]}}, r"load.concurrency \[4, 8\]"),
        ({"load": {"num_prompts": 16, "request_rate": [2.5]}}, "drop load.request_rate"),
    ],
)
def test_an_unsearchable_run_is_refused_before_any_engine(
    more: dict[str, Any], needle: str, tmp_path: Path
) -> None:
    with pytest.raises(SearchSetupError, match=needle):
        run([searched("small", 2, **more)], tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("max_probes", "code"), [(14, 0), (2, 1)])
def test_inferx_run_prints_the_answer_and_fails_without_one(
    max_probes: int, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A search stopped by its budget has no answer: the run exits 1, as bench does."""
    import argparse

    from inferx_core.cli.run import _execute

    cfg = searched("small", 2, search={**SEARCH, "max_probes": max_probes})
    args = argparse.Namespace(output=str(tmp_path), no_progress=True, resume=False)
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    assert _execute([cfg], args, pm, Platform()) == code
    printed = capsys.readouterr().out
    assert "Capacity at SLO" in printed and "small-tiny-model-fake-tp1-" in printed
    assert ("budget" in printed) == (code == 1)


def _sweep_yaml(path: Path, out: Path, matrix: str) -> Path:
    """A sweep config: ``search:`` in its base, two models (two server configurations)."""
    path.write_text(
        "base:\n"
        "  engine: fake\n"
        "  model: org/tiny-model\n"
        f"  output_dir: {json.dumps(str(out))}\n"
        f"  plugin_options: {json.dumps({**SERVER, 'max_concurrent': 3})}\n"
        f"  validity: {json.dumps(OPEN_VALIDITY)}\n"
        "  readiness_timeout_s: 30\n"
        "  stop_grace_s: 5\n"
        "  workload: {isl: 16, osl: 6}\n"
        "  load: {num_prompts: 16}\n"
        f"  search: {json.dumps(SEARCH)}\n"
        "matrix:\n"
        "  model: [org/tiny-model, org/other-model]\n" + matrix
    )
    return path


@pytest.fixture
def fake_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """``inferx run`` (the real CLI) with the fake engine as its only engine plugin."""
    from inferx_core.sdk import manager

    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    monkeypatch.setattr(manager, "get_plugin_manager", lambda *a, **k: pm)


def test_a_sweep_config_with_search_through_the_cli(
    fake_plugins: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``inferx run sweep.yaml``: one search per server configuration, the buyer's table
    printed, each answer written beside its probes."""
    out = tmp_path / "out"
    config = _sweep_yaml(tmp_path / "sweep.yaml", out, "")
    assert main(["run", str(config), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "Capacity at SLO" in printed
    written, skipped = load_search_summaries([out])
    assert not skipped and len(written) == 2
    models = sorted(s.server_id.split("-")[0] for s in written)  # type: ignore[union-attr]
    assert models == ["other", "tiny"]
    for s in written:
        assert (s.status, s.capacity) == ("found", 3), s.reason
        assert s.first_fail is not None and s.first_fail.level == 4
        assert s.server_id in printed  # type: ignore[operator]
    results = load_results([out]).results
    assert {r.identity.server_id for r in results} == {s.server_id for s in written}
    assert all(r.flat()["search"]["id"] in {s.search_id for s in written} for r in results)


def test_a_sweep_config_with_search_and_concurrency_is_refused_by_the_cli(
    fake_plugins: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    config = _sweep_yaml(tmp_path / "sweep.yaml", out, "  concurrency: [4, 8]\n")
    assert main(["run", str(config), "--no-progress"]) == 2
    assert "load.concurrency [4, 8]" in capsys.readouterr().err
    assert not out.exists()
