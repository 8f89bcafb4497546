"""``inferx export`` refuses a .requests.jsonl that is not its result's own.

The vLLM and InferenceX files are recomputed from the records: with another
run's sidecar beside a result, export wrote completed=1 and 16 tok/s for a
point whose result says 4 and 69.6, exit 0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.results.read import (
    load_results,
    read_request_records,
    requests_sidecar,
    sidecar_mismatch,
)
from inferx_core.testing import ServerProcess


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    with ServerProcess(ttft_ms=5, itl_ms=2) as server:
        config = BenchConfig(
            base_url=server.base_url,
            workload=Workload(isl=24, osl=6),
            load=LoadProfile(concurrency=[1, 2], num_prompts=4),
            output_dir=out,
        )
        run_bench(config, progress=False)
    return out


def _points(folder: Path) -> dict[int, Path]:
    """concurrency -> result path."""
    loaded = load_results([folder])
    return {r.identity.concurrency: loaded.paths[r.point_id] for r in loaded.results}


def test_the_points_own_sidecars_export(bench_dir: Path, tmp_path: Path, capsys) -> None:
    assert main(["export", str(bench_dir), "--format", "vllm", "--output", str(tmp_path)]) == 0
    assert len(list(tmp_path.glob("*.json"))) == 2, capsys.readouterr().err


def test_another_points_sidecar_is_refused_naming_both_files(
    bench_dir: Path, tmp_path: Path, capsys
) -> None:
    folder = tmp_path / "results"
    shutil.copytree(bench_dir, folder)
    paths = _points(folder)
    own, other = requests_sidecar(paths[1]), requests_sidecar(paths[2])
    assert own is not None and other is not None
    own.write_text(other.read_text().splitlines()[0] + "\n")  # one record of the other point
    out = tmp_path / "export"
    assert main(["export", str(folder), "--format", "vllm", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"{own} does not match {paths[1]}" in err
    assert "measured requests: 1 in the sidecar, 4 in the result" in err
    assert "put back the point's own .requests.jsonl" in err
    assert not out.exists()  # refused before anything was written


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_change_to_the_measured_records_is_caught(bench_dir: Path, data: st.DataObject) -> None:
    path = _points(bench_dir)[2]
    [result] = load_results([path]).results
    records = read_request_records(path)
    assert records is not None and sidecar_mismatch(result, records) is None
    measured = [r for r in records if not r.warmup]
    warmup = [r for r in records if r.warmup]
    kept = data.draw(st.lists(st.sampled_from(measured), max_size=2 * len(measured)))
    changed = sidecar_mismatch(result, warmup + kept)
    same_counts = len(kept) == len(measured) and sum(r.ok for r in kept) == result.load.completed
    assert (changed is None) == same_counts, changed
