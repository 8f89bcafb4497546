"""--workers N: one schedule split over processes, merged back on one clock.

Each run starts real worker processes against the scripted server (about a
second of start-up each), so the loads are small; timing assertions are loose
(the machine is shared).
"""

from __future__ import annotations

import _thread
import itertools
import os
import threading
import time
from pathlib import Path

import pytest

from inferx_core.load.prompts.sessions import Session, Turn, cycle_sessions
from inferx_core.load.schedule.client_load import ClientLoad, WorkerLoad
from inferx_core.load.schedule.scheduler import LoadConfig, PreparedRequest, arrival_intervals
from inferx_core.load.workers.clock import ClockServer, clock_map, exchange
from inferx_core.load.workers.files import records_path
from inferx_core.load.workers.group import WorkerGroup
from inferx_core.load.workers.merge import merge
from inferx_core.load.workers.placement import slurm_placement
from inferx_core.load.workers.plan import (
    auto_workers,
    effective_workers,
    endless_pool,
    split_load,
    with_arrival_times,
)
from inferx_core.metrics.validity import assess
from inferx_core.pipeline.point.drive import DrivePlan, drive
from inferx_core.pipeline.point.requests import BenchTarget, Requests
from inferx_core.telemetry.recorder import TelemetryRecorder
from inferx_core.testing import ServerProcess
from inferx_core.testing.server_pool import ServerPool


def _requests(make_request, n: int, warmup: int = 2, **x_test) -> Requests:
    measured = [make_request(i, 4, **x_test) for i in range(n)]
    warm = [make_request(-warmup + i, 2) for i in range(warmup)]
    for r in warm:
        r.record.warmup = True
    return Requests(None, measured, warm, n)  # type: ignore[arg-type]


def _drive(server: ServerProcess, requests: Requests, config: LoadConfig, workers: int, **kw):
    target = BenchTarget(server.base_url, "test-model")
    recorder = TelemetryRecorder([])
    plan = DrivePlan(target, requests, config, recorder, "t", progress=False, workers=workers, **kw)
    return drive(plan)


def _kinds(records) -> list[tuple[int, str | None, int]]:
    return sorted((r.request_id, r.error_kind, r.output_tokens) for r in records)


# -- the split ---------------------------------------------------------------------


def test_closed_loop_slots_and_requests_are_dealt_evenly(make_request) -> None:
    reqs = [make_request(i) for i in range(10)]
    split = split_load(LoadConfig(max_concurrency=10), reqs, [], 4)
    assert [s.config.max_concurrency for s in split.shares] == [3, 3, 2, 2]
    assert [r.record.request_id for r in split.shares[1].measured] == [1, 5, 9]
    assert effective_workers(8, LoadConfig(max_concurrency=3), 100) == 3
    assert auto_workers([0, 1]) == 1 and auto_workers(list(range(64))) == 8


def test_open_loop_arrivals_are_the_one_process_schedule(make_request) -> None:
    config = LoadConfig(request_rate=50.0, seed=3, burstiness=0.5)
    timed, cut = with_arrival_times([make_request(i) for i in range(30)], config)
    gaps = arrival_intervals(50.0, "poisson", 3, burstiness=0.5)
    expected = [0.0]
    for _ in range(29):
        expected.append(expected[-1] + next(gaps))
    assert [r.at_s for r in timed] == pytest.approx(expected) and not cut
    capped, cut = with_arrival_times(timed, LoadConfig(request_rate=50.0, duration_s=0.2))
    assert cut and all(r.at_s < 0.2 for r in capped) and len(capped) < 30


def test_a_session_stays_on_one_worker(make_request) -> None:
    reqs = [make_request(i) for i in range(6)]
    for i, r in enumerate(reqs):
        r.record.session_id = i // 3  # two sessions of three turns
    split = split_load(LoadConfig(max_concurrency=2), reqs, [], 2)
    assert [len(s.measured) for s in split.shares] == [3, 3]
    assert {r.record.session_id for r in split.shares[1].measured} == {1}


def _sessions(n: int, turns: int = 2) -> list[Session]:
    def session(sid: int) -> Session:
        turn_list = [Turn(f"user {sid} turn {k}", 4, 4) for k in range(turns)]
        return Session(sid, turn_list, "completions", "test-model", first_request_id=sid * turns)

    return [session(sid) for sid in range(n)]


def test_endless_sessions_cycle_as_one_process_cycles_them() -> None:
    pool = endless_pool(cycle_sessions(_sessions(3)), n_requests=6)
    assert [s.session_id for s in pool] == [0, 1, 2]
    one = list(itertools.islice(cycle_sessions(pool), 8))
    split = split_load(LoadConfig(max_concurrency=2), iter(()), [], 2, endless_pool=pool)
    mine = [list(itertools.islice(s.requests(), 4)) for s in split.shares]
    assert [u.first_request_id for u in mine[0]] == [u.first_request_id for u in one[0::2]]
    assert [u.session_id for u in mine[1]] == [1, 3, 5, 7]


def test_clock_exchange_on_one_host_finds_no_offset() -> None:
    with ClockServer("127.0.0.1") as srv:
        mapped = exchange("127.0.0.1", srv.port)
    assert mapped.method == "exchange"
    assert abs(mapped.offset_ns) <= mapped.uncertainty_ns + 2_000_000
    fallback, why = clock_map("another-boot", 0, ("127.0.0.1", 1))
    assert fallback.method == "wall_clock" and fallback.uncertainty_ns is None and why


# -- real workers ------------------------------------------------------------------


def test_two_workers_closed_loop_match_one(server: ServerProcess, make_request) -> None:
    config = LoadConfig(max_concurrency=4)
    one = _drive(server, _requests(make_request, 24, itl_ms=2), config, 1)
    two = _drive(server, _requests(make_request, 24, itl_ms=2), config, 2)
    assert _kinds(two.result.records) == _kinds(one.result.records)
    assert len(two.result.warmup_records) == len(one.result.warmup_records) == 2
    sends = [r.send_ns for r in two.result.records]
    assert sends == sorted(sends) and {r.worker for r in two.result.records} == {0, 1}
    assert 0 < two.result.window_start_ns <= sends[0] <= two.result.window_end_ns
    assert two.result.window_end_ns == max(r.end_ns for r in two.result.records)
    assert [w.requests for w in two.workers] == [12, 12]
    assert two.client_load is not None and len(two.client_load.workers) == 2
    assert two.per_worker()[0]["worker"] == 0 and two.abort_reason is None


def test_two_workers_open_loop_follow_one_schedule(server: ServerProcess, make_request) -> None:
    config = LoadConfig(request_rate=100.0, seed=5)
    two = _drive(server, _requests(make_request, 30), config, 2)
    records = two.result.records
    assert len(records) == 30 and all(r.ok for r in records)
    planned, _ = with_arrival_times([make_request(i) for i in range(30)], config)
    at = {r.record.request_id: r.at_s for r in planned}
    origin = min(r.scheduled_ns for r in records)  # request 0, at 0 s
    for r in records:  # one timeline: both workers' arrivals where the schedule put them
        assert (r.scheduled_ns - origin) / 1e9 == pytest.approx(at[r.request_id], abs=0.005)
        assert r.send_ns - r.scheduled_ns < 500_000_000
    rates = [(w.target_rate, w.achieved_rate) for w in two.workers]
    assert all(t and a and a > 0.5 * t for t, a in rates)


def test_two_workers_run_sessions_as_one_does(server: ServerProcess) -> None:
    config = LoadConfig(max_concurrency=2)
    runs = [
        _drive(server, Requests(None, _sessions(4), [], 8), config, workers)  # type: ignore[arg-type]
        for workers in (1, 2)
    ]
    one, two = (sorted((r.session_id, r.turn, r.request_id, r.ok) for r in d.result.records)
                for d in runs)  # fmt: skip
    assert one == two and len(two) == 8 and all(ok for *_, ok in two)
    by_session = {}
    for r in runs[1].result.records:
        by_session.setdefault(r.session_id, set()).add(r.worker)
    assert all(len(workers) == 1 for workers in by_session.values())  # a session on one worker


def test_duration_stops_every_worker(server: ServerProcess, make_request) -> None:
    config = LoadConfig(max_concurrency=2, duration_s=0.6)
    reqs = _requests(make_request, 4, ttft_ms=20)
    reqs.measured = iter(_cycle_like(reqs.measured))
    two = _drive(server, reqs, config, 2)
    ids = [r.request_id for r in two.result.records]
    assert two.result.stopped_by_duration and len(ids) == len(set(ids)) > 4
    assert {r.worker for r in two.result.records} == {0, 1}
    assert two.result.window_s < 5


def _cycle_like(pool: list[PreparedRequest]):
    """What build_requests gives a duration-bound run: the pool, then fresh copies."""
    import dataclasses
    import itertools

    for n, req in enumerate(itertools.cycle(pool)):
        record = dataclasses.replace(req.record, request_id=n, chunk_ns=[])
        yield PreparedRequest(req.path, req.payload, record)


def _after_records(path: Path, count: int, then) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and path.read_bytes().count(b"\n") >= count:
                then()
                return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_dead_worker_stops_the_load_and_keeps_its_records(
    server: ServerProcess, make_request, tmp_path: Path
) -> None:
    reqs = _requests(make_request, 40, warmup=0, ttft_ms=60)
    split = split_load(LoadConfig(max_concurrency=2), reqs.measured, [], 2)
    group = WorkerGroup(split, server.base_url, {}, tmp_path)
    _after_records(records_path(tmp_path, 0), 3, lambda: os.kill(group.procs[0].pid, 9))
    out = group.run()
    assert out.abort_reason and "worker 0" in out.abort_reason
    mine = [r for r in out.result.records if r.worker == 0]
    assert len(mine) >= 3 and all(r.ok for r in mine)
    others = [r for r in out.result.records if r.worker == 1]
    assert len(others) < 20 and others[-1].error_kind == "cancelled"  # stopped, flushed
    assert out.workers[0].error and "code -9" in out.workers[0].error


def test_ctrl_c_keeps_every_finished_record(
    server: ServerProcess, make_request, tmp_path, ctrl_c_raises: None
) -> None:
    # 2000 requests of >= 30 ms at c4: the load runs for tens of seconds, so the Ctrl-C
    # (once 2 records are written) lands in it however late the watching thread wakes
    reqs = _requests(make_request, 2000, warmup=0, ttft_ms=30)
    watcher = _after_records(records_path(tmp_path, 1), 2, _thread.interrupt_main)
    out = _drive(server, reqs, LoadConfig(max_concurrency=4), 2, workers_dir=tmp_path)
    watcher.join(timeout=5)
    assert out.interrupted and out.result.cancelled
    done = [r for r in out.result.records if r.ok]
    cancelled = [r for r in out.result.records if r.error_kind == "cancelled"]
    assert len(done) >= 2 and cancelled and len(out.result.records) < 2000
    assert 1 in {r.worker for r in done}  # the worker whose records triggered the Ctrl-C


def test_a_ctrl_c_as_a_finished_load_closes_still_interrupts(
    server: ServerProcess, make_request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Ctrl-C lands at the racy instant itself: the load has ended, the workers close."""
    reqs = _requests(make_request, 6, warmup=0)
    split = split_load(LoadConfig(max_concurrency=2), reqs.measured, [], 2)
    group = WorkerGroup(split, server.base_url, {}, tmp_path)
    real_close = WorkerGroup.close
    calls: list[int] = []

    def close_after_ctrl_c(self: WorkerGroup) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt  # as the Ctrl-C does, raised where the main thread is
        real_close(self)

    monkeypatch.setattr(WorkerGroup, "close", close_after_ctrl_c)
    out = group.run()
    # before: swallowed, interrupted False, and `inferx run` went on to its next point
    assert out.interrupted and out.result.cancelled and out.abort_reason is None
    assert sorted(r.request_id for r in out.result.records if r.ok) == list(range(6))
    assert all(p.poll() is not None for p in group.procs)


# -- the verdict -------------------------------------------------------------------


def test_a_worker_that_cannot_keep_up_invalidates_with_the_fix() -> None:
    fine = WorkerLoad(0, requests=50, target_rate=100.0, achieved_rate=99.0, loop_lag_p95_ms=1.0)
    slow = WorkerLoad(1, requests=50, target_rate=100.0, achieved_rate=60.0, cpu_fraction=0.99)
    load = ClientLoad(None, None, None, (0, 1), None).with_workers((fine, slow))
    verdict = assess([], {}, open_loop_rate=None, client_load=load)
    check = {c.name: c for c in verdict.checks}["client_bottleneck"]
    assert not check.passed and not verdict.valid
    assert "worker 1" in check.why and "--workers 4" in check.why
    assert load.process_cpu_fraction == 0.99 and load.total_cpu_cores == 0.99
    good = ClientLoad(None, None, None, (0, 1), None).with_workers((fine,))
    assert {c.name: c for c in assess([], {}, open_loop_rate=None, client_load=good).checks}[
        "client_bottleneck"
    ].passed


def test_srun_placement_puts_workers_on_the_client_nodes() -> None:
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "3", "INFERX_CLIENT_NODES": "2"}
    placement = slurm_placement(env)
    assert placement is not None and placement.remote
    assert [placement.node_of(w) for w in range(4)] == [1, 2, 1, 2]  # node 0 serves
    argv = placement.wrap(3, ["python", "-m", "inferx_core.load.workers", "plan-3.pkl"])
    assert "--relative=2" in argv and "--overlap" in argv and argv[-1] == "plan-3.pkl"
    assert "127.0.0.1" not in placement.reachable_url("http://127.0.0.1:8000/v1")
    one_node = slurm_placement({**env, "SLURM_JOB_NUM_NODES": "1"})
    assert one_node is not None and one_node.node_of(1) == 0
    assert one_node.reachable_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000"
    assert slurm_placement({"INFERX_CLIENT_NODES": "2"}) is None  # not inside a job


def test_server_pool_serves_one_port_from_several_processes() -> None:
    import httpx

    with ServerPool(2, itl_ms=1) as pool:
        assert len({m.proc.pid for m in pool.members if m.proc}) == 2
        assert httpx.get(pool.base_url + "/v1/models", timeout=10).json()["data"][0]["id"]


def test_a_worker_that_cannot_start_is_named(make_request, tmp_path: Path) -> None:
    split = split_load(LoadConfig(max_concurrency=2), [make_request(i) for i in range(4)], [], 2)
    out = WorkerGroup(split, "ftp://nowhere", {}, tmp_path).run()
    assert out.abort_reason and "failed" in out.abort_reason and "base_url" in out.abort_reason
    assert out.result.records == [] and not out.interrupted


def test_stamps_of_another_host_move_onto_the_parent_clock(make_request) -> None:
    split = split_load(LoadConfig(max_concurrency=2), [make_request(i) for i in range(2)], [], 2)
    recs = [[make_request(0).record], [make_request(1).record]]
    for w, (rec,) in enumerate(recs):
        rec.send_ns, rec.chunk_ns, rec.end_ns = 1_000 + w, [2_000 + w], 3_000 + w
    remote = {"clock": {"method": "exchange", "offset_ns": 500, "uncertainty_ns": 20}}
    result, loads = merge(split, recs, [None, remote], [None, None], unix_offset_ns=0)
    moved = result.records[1]
    assert (moved.send_ns, moved.chunk_ns, moved.end_ns) == (1_501, [2_501], 3_501)
    assert result.records[0].send_ns == 1_000  # same host: unchanged
    assert loads[1].clock == "exchange" and loads[1].clock_uncertainty_ns == 20
    assert result.window_end_ns == 3_501
