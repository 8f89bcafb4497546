"""One flat row per result: what it is (engine, model, GPUs, precision, scenario, load),
what it measured, what it costs, and whether it is on a Pareto frontier.

Pure functions, no I/O. Rows are what the report's table, CSV and plots use.

Configuration group (one frontier each): GPU type, engine, model, precision
and ISL/OSL scenario; the frontier inside a group runs over parallelism
(TP/PP/DP/EP) and load (concurrency or rate). The *overall* frontier runs
over every group with the same model and scenario (mixing workloads makes
no frontier). Only points with status ``ok`` and both coordinates can be on
a frontier.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from inferx_core.analysis.cost import CostOptions, cost_fields
from inferx_core.analysis.layers import layer_steps
from inferx_core.analysis.pareto import mask_by_group
from inferx_core.results.model import PointResultBase
from inferx_core.sdk.numbers import is_finite_number
from inferx_core.tables.columns import METRIC_FIELDS

__all__ = [
    "INTERACTIVITY",
    "LATENCY",
    "METRIC_FIELDS",
    "THROUGHPUT",
    "build_rows",
    "describe_point",
    "series_of",
]

THROUGHPUT = "tput_per_gpu"
INTERACTIVITY = "median_intvty"
LATENCY = "median_e2el_ms"

_LOAD_SUFFIX = re.compile(r"-(c\d+|r[0-9][0-9.e+]*(-cap\d+)?)$")


def _short_model(name: str | None) -> str:
    if not name:
        return "?"
    return str(name).rstrip("/").rsplit("/", 1)[-1]


def _precision(config: Mapping[str, Any]) -> str:
    quant = (config.get("engine_args") or {}).get("quantization")
    parts = []
    if quant:
        parts.append(str(quant))
    if config.get("dtype"):
        parts.append(str(config["dtype"]))
    if config.get("kv_cache_dtype"):
        parts.append(f"kv={config['kv_cache_dtype']}")
    return " ".join(parts) or "default"


def series_of(point_id: str) -> str:
    """The point id without its load level: the server configuration and scenario."""
    return _LOAD_SUFFIX.sub("", point_id)


def _load_level(result: PointResultBase) -> tuple[int | None, float | None, int | None]:
    """(closed-loop concurrency, open-loop request rate, open-loop concurrency cap)."""
    ident = result.identity
    if ident.mode == "open":
        return None, ident.request_rate, ident.max_concurrency
    if ident.mode == "closed":
        return ident.concurrency, None, None
    return None, None, None


def _engine(result: PointResultBase, config: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(engine name, engine version): the result's engine block, else the config's name."""
    engine = result.provenance.engine
    if engine is not None:
        return engine.name, engine.version
    name = config.get("engine")
    return (str(name) if name else None), None


def _scenario(result: PointResultBase, config: Mapping[str, Any]) -> dict[str, Any]:
    """Workload kind, ISL/OSL and API: the config's workload, else the built spec."""
    workload = config.get("workload") or {}
    built = result.workload
    spec = built.spec if built is not None else {}
    kind = workload.get("kind") or spec.get("kind")
    isl = workload.get("isl", spec.get("isl"))
    osl = workload.get("osl", spec.get("osl"))
    random = kind in (None, "random")
    return {
        "workload_kind": kind,
        "isl": isl if random else None,
        "osl": osl if random else None,
        "scenario": f"{isl}/{osl}" if random else str(kind),
        "api": (built.api if built is not None else None) or workload.get("api"),
    }


def describe_point(result: PointResultBase) -> dict[str, Any]:
    """What a result is: engine, model, parallelism, precision, scenario, load level."""
    prov = result.provenance
    # config and platform stay free-form dicts in the model (the run's own schemas).
    config: Mapping[str, Any] = prov.config or {}
    engine, engine_version = _engine(result, config)
    par = config.get("parallelism") or {}
    concurrency, rate, cap = _load_level(result)
    platform = prov.platform
    pid = result.point_id
    return {
        "point_id": pid,
        "series": series_of(pid),
        "status": result.status,
        "failure_reason": result.failure_reason,
        "date": result.identity.date,
        "engine": engine or "external",
        "engine_version": engine_version,
        "model": _short_model(prov.model_id or config.get("model")),
        "tp": par.get("tp"),
        "pp": par.get("pp"),
        "dp": par.get("dp"),
        "ep": par.get("ep"),
        "precision": _precision(config),
        **_scenario(result, config),
        "mode": result.identity.mode,
        "concurrency": concurrency,
        "request_rate": rate,
        "concurrency_cap": cap,
        "has_platform": platform is not None,
        "cpu_only": platform is not None and not platform.get("accelerators"),
    }


def repeat_columns(result: PointResultBase) -> dict[str, Any]:
    """``repeats`` and the spread of output throughput across them (None: one run)."""
    rep = result.repeats
    stat = rep.stats.get("output_throughput") if rep is not None else None
    return {
        "repeats": rep.n if rep is not None else None,
        "output_throughput_min": stat.min if stat else None,
        "output_throughput_max": stat.max if stat else None,
        "output_throughput_ci95_low": stat.ci95_low if stat else None,
        "output_throughput_ci95_high": stat.ci95_high if stat else None,
    }


def _hardware_label(row: Mapping[str, Any]) -> str:
    if row.get("gpu_type"):
        return str(row["gpu_type"])
    return "CPU" if row.get("cpu_only") else "unknown GPU"


def build_rows(
    results: Iterable[PointResultBase],
    options: CostOptions | None = None,
    paths: Mapping[str, Path] | None = None,
) -> list[dict[str, Any]]:
    """One row per result, sorted by group then series then load, with Pareto flags.

    Columns (``tables.columns.ROW_COLUMNS``, in the report's CSV order): identity
    (``describe_point``), ``hardware``, ``group``, the metric fields (``METRIC_FIELDS``),
    cost and power (``cost_fields``; ``tput_per_gpu`` there is the result's own or, where
    the result has no GPU count, its total divided by the assumed ``num_gpus``), and
    ``on_pareto`` (own group, interactivity vs tok/s/gpu), ``on_pareto_overall`` (same model and
    scenario) and ``on_pareto_latency`` (own group, median E2E vs tok/s/gpu); the
    ``ttft_layer*`` fields name the layer of the TTFT that moved from the series' previous
    load point (``analysis.layers.layer_steps``).
    """
    options = options or CostOptions()
    rows: list[dict[str, Any]] = []
    anatomies: dict[str, Any] = {}  # the TTFT's parts: the layer that moved along a series
    for result in results:
        anatomies[result.point_id] = result.anatomy
        row = describe_point(result)
        flat = result.flat()  # the metric columns are named by their flat (vLLM) names
        row.update({k: flat.get(k) for k in METRIC_FIELDS})
        row.update(cost_fields(result, options))
        row.update(repeat_columns(result))
        validity = result.validity
        row["valid"] = None if validity is None else validity.valid
        row["validity_failing"] = (
            None if validity is None else ",".join(c.name for c in validity.failing) or None
        )
        row["hardware"] = _hardware_label(row)
        row["group"] = " | ".join(
            [row["hardware"], str(row["engine"]), row["model"], row["precision"], row["scenario"]]
        )
        row["path"] = str(paths[row["point_id"]]) if paths and row["point_id"] in paths else None
        rows.append(row)
    rows.sort(
        key=lambda r: (
            r["group"],
            r["series"],
            r["concurrency"] if r["concurrency"] is not None else math.inf,
            r["request_rate"] if r["request_rate"] is not None else math.inf,
            r["point_id"],
        )
    )
    mark_pareto(rows, include_invalid=options.include_invalid)
    layer_steps(rows, anatomies)
    return rows


def _coords(x_field: str, y_field: str, statuses: frozenset[str]) -> Any:
    def key(row: Mapping[str, Any]) -> tuple[float | None, float | None]:
        if row.get("status") not in statuses:
            return None, None
        x, y = row.get(x_field), row.get(y_field)
        return (x if is_finite_number(x) else None, y if is_finite_number(y) else None)

    return key


def mark_pareto(rows: Sequence[dict[str, Any]], *, include_invalid: bool = False) -> None:
    """Set on_pareto, on_pareto_overall, on_pareto_latency on each row (in place).

    Only ok points can be on a frontier; ``include_invalid`` admits invalid ones.
    """
    statuses = frozenset({"ok", "invalid"} if include_invalid else {"ok"})
    intvty = _coords(INTERACTIVITY, THROUGHPUT, statuses)
    flags = mask_by_group(rows, intvty, lambda r: r["group"])
    overall = mask_by_group(rows, intvty, lambda r: (r["model"], r["scenario"]))
    latency = mask_by_group(
        rows, _coords(LATENCY, THROUGHPUT, statuses), lambda r: r["group"], x="min"
    )
    for row, a, b, c in zip(rows, flags, overall, latency, strict=True):
        row["on_pareto"] = a
        row["on_pareto_overall"] = b
        row["on_pareto_latency"] = c
