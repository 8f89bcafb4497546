"""Rows of a hand-made result set: identity, groups, golden cost figures, Pareto flags."""

from __future__ import annotations

import pytest
from result_factory import make_model, make_result

from inferx_core.analysis.cost import CostOptions
from inferx_core.analysis.points import build_rows, describe_point, series_of
from inferx_core.results.model import FailedResult, Identity, Provenance, parse_result

# One H200 vLLM group over TP and concurrency, one MI300X group, one failed point
# (schema-1 files, read through the migration as a reader reads them).
RESULT_FILES = [
    make_result("h200-tp1-c4", tput_per_gpu=500.0, median_intvty=100.0, concurrency=4),
    make_result("h200-tp1-c16", tput_per_gpu=1200.0, median_intvty=60.0, concurrency=16),
    make_result("h200-tp1-c64", tput_per_gpu=2000.0, median_intvty=20.0, concurrency=64),
    # dominated by tp1-c16 (less throughput at less interactivity)
    make_result(
        "h200-tp2-c16", tput_per_gpu=1100.0, median_intvty=55.0, tp=2, num_gpus=2, concurrency=16
    ),
    make_result(
        "h200-tp2-c4", tput_per_gpu=400.0, median_intvty=130.0, tp=2, num_gpus=2, concurrency=4
    ),
    make_result(
        "mi300x-tp1-c16",
        tput_per_gpu=1300.0,
        median_intvty=50.0,
        gpu_name="AMD Instinct MI300X",
        concurrency=16,
    ),
    make_result(
        "mi300x-tp1-c64",
        tput_per_gpu=1500.0,
        median_intvty=15.0,
        gpu_name="AMD Instinct MI300X",
        concurrency=64,
    ),
    make_result("h200-tp1-c256", status="failed", tput_per_gpu=None, median_intvty=None),
]
RESULTS = [parse_result(r) for r in RESULT_FILES]


def by_id(rows):
    return {r["point_id"]: r for r in rows}


def test_groups_and_pareto_flags() -> None:
    rows = by_id(build_rows(RESULTS))
    h200 = "H200 | vllm | Model-8B | default | 1024/1024"
    assert rows["h200-tp2-c4"]["group"] == h200
    assert rows["mi300x-tp1-c16"]["group"] == "MI300X | vllm | Model-8B | default | 1024/1024"
    on = {pid for pid, r in rows.items() if r["on_pareto"]}
    assert on == {
        "h200-tp1-c4",
        "h200-tp1-c16",
        "h200-tp1-c64",
        "h200-tp2-c4",
        "mi300x-tp1-c16",
        "mi300x-tp1-c64",
    }
    overall = {pid for pid, r in rows.items() if r["on_pareto_overall"]}
    # MI300X c16 (1300 @ 50) is not dominated by any H200 point; MI300X c64 is (2000 @ 20).
    assert overall == {
        "h200-tp1-c4",
        "h200-tp1-c16",
        "h200-tp1-c64",
        "h200-tp2-c4",
        "mi300x-tp1-c16",
    }
    assert rows["h200-tp1-c256"]["on_pareto"] is False  # failed: never on a frontier


def test_latency_frontier_flag() -> None:
    results = [
        make_result("a", tput_per_gpu=100.0, median_e2el_ms=500.0),
        make_result("b", tput_per_gpu=300.0, median_e2el_ms=900.0),
        make_result("c", tput_per_gpu=200.0, median_e2el_ms=1000.0),  # slower and less
    ]
    rows = by_id(build_rows([parse_result(r) for r in results]))
    assert [rows[k]["on_pareto_latency"] for k in "abc"] == [True, True, False]


def test_golden_row_values() -> None:
    rows = by_id(build_rows(RESULTS))
    r = rows["h200-tp2-c16"]
    assert r["num_gpus"] == 2 and r["num_gpus_source"] == "result"
    assert r["tput_per_gpu"] == 1100.0
    assert r["cost_per_mtok_total"] == pytest.approx(1.41 / (1100 * 3600 / 1e6))
    assert r["cost_per_mtok_total"] == pytest.approx(0.356061, rel=1e-5)
    assert r["cost_per_mtok_output"] == pytest.approx(0.712121, rel=1e-5)
    assert r["tok_s_per_mw_provisioned"] == pytest.approx(635838.15, rel=1e-6)
    m = rows["mi300x-tp1-c16"]
    assert m["usd_per_gpu_hour"] == 1.12
    assert m["cost_per_mtok_total"] == pytest.approx(0.239316, rel=1e-5)
    assert m["kw_per_gpu"] == 1.79
    assert (r["tp"], r["concurrency"], r["scenario"], r["engine"]) == (2, 16, "1024/1024", "vllm")


def test_rows_sorted_by_group_series_and_concurrency() -> None:
    ids = [r["point_id"] for r in build_rows(RESULTS)]
    assert ids.index("h200-tp1-c4") < ids.index("h200-tp1-c16") < ids.index("h200-tp1-c64")
    assert ids.index("h200-tp1-c64") < ids.index("mi300x-tp1-c16")


def test_bench_results_use_the_assumed_gpu_count() -> None:
    results = [
        make_result("x-c1", num_gpus=None, tput_per_gpu=800.0, bench=True, engine=None),
        make_result("x-c4", num_gpus=None, tput_per_gpu=2400.0, bench=True, engine=None),
    ]
    rows = build_rows([parse_result(r) for r in results], CostOptions(num_gpus=8, gpu_type="H200"))
    assert [r["tput_per_gpu"] for r in rows] == [100.0, 300.0]
    assert all(r["num_gpus_source"] == "assumed (--num-gpus)" for r in rows)
    assert all(r["engine"] == "external" for r in rows)
    assert rows[0]["group"] == "H200 | external | Model-8B | default | 1024/1024"


def test_precision_and_series_labels() -> None:
    r = make_result(
        "chat-fp8-Model-vllm-tp1-kvfp8-completions-isl1024-osl1024-c32",
        quantization="fp8",
        kv_cache_dtype="fp8",
    )
    d = describe_point(parse_result(r))
    assert d["precision"] == "fp8 kv=fp8"
    assert d["series"] == "chat-fp8-Model-vllm-tp1-kvfp8-completions-isl1024-osl1024"
    assert series_of("x-r2.5-cap64") == "x"
    assert series_of("x-r10") == "x"
    # a schema-1 failed point that never ran: the migration recovers its level from the id
    failed = {
        "schema_version": 1,
        "point_id": "srv-completions-isl1-osl1-c16",
        "status": "failed",
        "failure_reason": "engine did not start",
    }
    assert describe_point(parse_result(failed))["concurrency"] == 16


def test_open_loop_points_carry_a_rate_not_a_concurrency() -> None:
    r = make_result("srv-completions-isl1024-osl1024-r2.5-cap64", concurrency=64)
    r.update(mode="open", request_rate=2.5)
    d = describe_point(parse_result(r))
    assert (d["concurrency"], d["request_rate"], d["concurrency_cap"]) == (None, 2.5, 64)
    assert d["series"] == "srv-completions-isl1024-osl1024"
    never_ran = {
        "schema_version": 1,
        "point_id": "srv-r0.5",
        "status": "failed",
        "failure_reason": "engine did not start",
    }
    assert describe_point(parse_result(never_ran))["request_rate"] == 0.5
    from inferx_core.tables.points import cell

    assert cell(d, "concurrency", "load") == "2.5 req/s cap 64"
    assert cell(describe_point(make_model("x", concurrency=8)), "concurrency", "load") == "c8"


def _never_ran(point_id: str, **identity: object) -> FailedResult:
    """A schema-2 failed point that never ran: no measured sections, level in identity."""
    return FailedResult(
        failure_reason="engine did not start",
        identity=Identity(point_id=point_id, date="2026-01-01T00:00:00+00:00", **identity),
        provenance=Provenance(inferx_version="0.2.0"),
    )


def test_a_failed_point_that_never_ran_takes_its_level_from_identity() -> None:
    # The ids carry no (or a contradicting) load suffix: the level comes from identity only.
    closed = describe_point(
        _never_ran("my-server-x", mode="closed", concurrency=16, max_concurrency=16)
    )
    assert (closed["mode"], closed["concurrency"], closed["request_rate"]) == ("closed", 16, None)
    assert closed["status"] == "failed" and closed["failure_reason"] == "engine did not start"
    opened = describe_point(_never_ran("srv-c4", mode="open", request_rate=0.5, max_concurrency=64))
    assert (opened["concurrency"], opened["request_rate"], opened["concurrency_cap"]) == (
        None,
        0.5,
        64,
    )
    unknown = describe_point(_never_ran("srv-c8"))  # no level recorded: none guessed
    assert (unknown["concurrency"], unknown["request_rate"]) == (None, None)
    [row] = build_rows([_never_ran("srv", mode="closed", concurrency=2, max_concurrency=2)])
    assert row["concurrency"] == 2 and row["tput_per_gpu"] is None and row["on_pareto"] is False


def test_every_declared_column_is_a_row_column_and_the_csv_writes_them_all() -> None:
    """One column list (tables.columns): build_rows makes every column but the accuracy
    ones, which the report adds; the CSV and METRIC_FIELDS are read off the same list."""
    from inferx_core.analysis.points import METRIC_FIELDS
    from inferx_core.report.accuracy import POINT_FIELDS, add_accuracy
    from inferx_core.tables.columns import ACCURACY_FIELDS, ROW_COLUMNS, column_names
    from inferx_core.tables.points import CSV_COLUMNS

    names = [name for name, _ in ROW_COLUMNS]
    assert len(names) == len(set(names))
    assert tuple(names) == CSV_COLUMNS
    assert POINT_FIELDS == ACCURACY_FIELDS == column_names("accuracy")
    assert column_names("metric") == METRIC_FIELDS and "tput_per_gpu" not in METRIC_FIELDS
    rows = build_rows(RESULTS)
    for row in rows:
        assert set(names) - set(row) == set(ACCURACY_FIELDS), row["point_id"]
    add_accuracy(rows, RESULTS)
    assert all(set(names) <= set(row) for row in rows)
