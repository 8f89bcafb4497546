"""Results other tools produced, as InferX results (``inferx import``).

- a vLLM ``bench serve --save-result`` file (also InferenceX's fork of it);
- an InferenceX aggregate (``agg_*.json`` of ``process_result.py``, or the
  list ``collect_results.py`` writes).

Figures the file does not carry are None in the result, listed in
``provenance.imported_from.unknown`` and given a null reason; nothing is
filled in. vLLM writes 0 for the statistics of an empty sample: with no
successful request those become None.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from inferx_core._version import __version__
from inferx_core.config.parsing import ParseError
from inferx_core.errors import UserFacingError
from inferx_core.interop.inference_perf_requests import SUMMARY_NAME, read_with_summary
from inferx_core.interop.judged import VERDICT_CHECKS, judge, summary_validity
from inferx_core.interop.tool_formats import sniff_tool, tool_points
from inferx_core.interop.vllm_bench import SPEC_DECODE_KEYS
from inferx_core.interop.vllm_detailed import has_detail, vllm_run
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.model import LATENCY_NAMES, Distribution
from inferx_core.metrics.stats import percentile_word
from inferx_core.results.model import PointResultBase, parse_result
from inferx_core.results.read import read_json

_PERCENTILE_KEY = re.compile(r"^p(\d+(?:\.\d+)?)_ttft(?:_ms)?$")
_STATS = ("mean", "median", "std")
_IMPORTED = "not in the imported {tool} file"
#: Why a summary-only file cannot get most of the verdict.
_NO_DETAIL = {
    "vllm bench serve": "a vllm bench serve file without --save-detailed has no per-request "
    "data (re-run with --save-detailed)",
    "InferenceX aggregate": "an InferenceX aggregate holds figures only, no requests",
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "imported"


def _percentiles(data: Mapping[str, Any]) -> list[float]:
    found = [float(m[1]) for key in data if (m := _PERCENTILE_KEY.match(key))]
    return sorted(found)


def _distribution(
    data: Mapping[str, Any], metric: str, percentiles: list[float], *, scale: float, suffix: str
) -> Distribution:
    def value(key: str) -> float | None:
        raw = data.get(f"{key}_{metric}{suffix}")
        return None if raw is None else float(raw) * scale

    words = [f"p{percentile_word(p)}" for p in percentiles]
    return Distribution(
        mean=value("mean"),
        median=value("median"),
        std=value("std"),
        percentiles={w: value(w) for w in words},
    )


def _empty_latency(percentiles: list[float]) -> dict[str, Any]:
    return {
        "percentiles": percentiles,
        "itl_zero_gap_fraction": None,
        "itl_per_token_requests": 0,
        "itl_per_token_ms": Distribution().model_dump(),
        "ttft_ms_error_adjusted": {},
        "e2el_ms_error_adjusted": {},
        "intvty_requests": 0,
        "request_intvty": Distribution().model_dump(),
    }


def _counts(data: Mapping[str, Any]) -> dict[str, Any]:
    completed, failed = data.get("completed"), data.get("failed")
    total = completed + failed if completed is not None and failed is not None else None
    return {
        "duration": data.get("duration"),
        "completed": completed,
        "failed": failed,
        "total_requests": total,
        "warmup_excluded": None,
        "total_input_tokens": data.get("total_input_tokens"),
        "total_output_tokens": data.get("total_output_tokens"),
        "output_tokens_estimated": None,
        "output_tokens_estimated_requests": None,
        "output_token_sources": {},
        "max_concurrent_requests": data.get("max_concurrent_requests"),
        "failed_by_kind": {},
        "error_samples": [],
        "no_successful_requests": None if completed is None else completed == 0,
    }


def _throughput(data: Mapping[str, Any], num_gpus: int | None = None) -> dict[str, Any]:
    def per_gpu(key: str) -> float | None:
        value = data.get(key)
        return value * num_gpus if num_gpus and value is not None else None

    return {
        "request_throughput": data.get("request_throughput"),
        "request_goodput": data.get("request_goodput"),
        "output_throughput": data.get("output_throughput") or per_gpu("output_tput_per_gpu"),
        "total_token_throughput": data.get("total_token_throughput") or per_gpu("tput_per_gpu"),
        "max_output_tokens_per_s": data.get("max_output_tokens_per_s"),
        "num_gpus": num_gpus,
        "tput_per_gpu": data.get("tput_per_gpu"),
        "output_tput_per_gpu": data.get("output_tput_per_gpu"),
        "input_tput_per_gpu": data.get("input_tput_per_gpu"),
    }


def _unknown(sections: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return sorted(k for section in sections.values() for k, v in section.items() if v is None)


def _vllm_identity(data: Mapping[str, Any], point_id: str, date: str) -> dict[str, Any]:
    rate = data.get("request_rate", "inf")
    closed = str(rate) == "inf" and data.get("max_concurrency") is not None
    conc = data.get("max_concurrency")
    return {
        "point_id": point_id,
        "mode": "closed" if closed else "open",
        "concurrency": conc if closed else None,
        "request_rate": None if closed or str(rate) == "inf" else float(rate),
        "max_concurrency": conc,
        "date": date,
    }


def _vllm_date(data: Mapping[str, Any], path: Path) -> str:
    try:
        local = dt.datetime.strptime(str(data.get("date")), "%Y%m%d-%H%M%S")
        return local.astimezone().isoformat(timespec="seconds")
    except ValueError:
        return _mtime(path)


def _mtime(path: Path) -> str:
    stamp = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc)
    return stamp.isoformat(timespec="seconds")


def _vllm_point(data: Mapping[str, Any], path: Path) -> Imported:
    if not has_detail(data):
        return import_vllm(data, path), None
    run = vllm_run(data, path, _vllm_date(data, path))
    run.tool_figures = {k: v for k, v in data.items() if _kept(k, v)}
    return judge(run), run.records


def _kept(key: str, value: Any) -> bool:
    """A figure of the file kept as it is: no per-request list, but vLLM's speculative
    per-position rates (a list per point)."""
    return not isinstance(value, list) or key in SPEC_DECODE_KEYS


def import_vllm(data: Mapping[str, Any], path: Path) -> PointResultBase:
    """A vLLM ``bench serve`` result file as an InferX result: with ``--save-detailed``,
    recomputed from its per-request lists and judged; else its own figures."""
    if has_detail(data):
        return _vllm_point(data, path)[0]
    percentiles = _percentiles(data)
    empty = data.get("completed") == 0  # vLLM's 0.0 statistics mean "no sample" then
    latency = _empty_latency(percentiles) | {
        f"{m}_ms": (
            Distribution() if empty else _distribution(data, m, percentiles, scale=1, suffix="_ms")
        ).model_dump()
        for m in LATENCY_NAMES
    }
    counts, throughput = _counts(data), _throughput(data)
    offered = {
        "num_prompts": data.get("num_prompts") or 0,
        "num_prompts_planned": data.get("num_prompts"),
        "arrival": None if str(data.get("request_rate")) == "inf" else _arrival(data),
        "stopped_by": "num_prompts",
        "benchmark_start_time_unix": data.get("benchmark_start_time_unix"),
        "benchmark_end_time_unix": data.get("benchmark_end_time_unix"),
    }
    known_keys = set(counts) | set(throughput) | set(offered) | {"date", "model_id", "backend"}
    extra = {
        k: v
        for k, v in data.items()
        if k not in known_keys and not k.endswith("_ms") and _kept(k, v)
    }
    return _assemble(
        path,
        tool="vllm bench serve",
        identity=_vllm_identity(data, _slug(path.stem), _vllm_date(data, path)),
        sections={"load": counts | offered, "throughput": throughput, "latency": latency},
        provenance={
            "backend": data.get("backend"),
            "model_id": data.get("model_id"),
            "extra": extra,
        },
    )


def _arrival(data: Mapping[str, Any]) -> str:
    burstiness = str(data.get("burstiness", 1.0))
    if burstiness == "inf":
        return "constant"
    return "poisson" if float(burstiness) == 1.0 else f"gamma(burstiness={burstiness})"


def _assemble(
    path: Path,
    *,
    tool: str,
    identity: dict[str, Any],
    sections: dict[str, dict[str, Any]],
    provenance: dict[str, Any],
) -> PointResultBase:
    completed = sections["load"].get("completed")
    unknown = _unknown({k: v for k, v in sections.items() if k != "latency"})
    why = _IMPORTED.format(tool=tool)
    load = sections["load"]
    percentiles = sections["latency"].get("percentiles") or []
    validity = summary_validity(
        {"completed": completed, "failed": load.get("failed"), "percentiles": percentiles}
    )
    status, reason = "ok", None
    if completed == 0:
        status, reason = "failed", "no successful requests"
    elif not validity.valid:
        status, reason = "invalid", f"invalid: {validity.summary()}"
    no_detail = _NO_DETAIL.get(tool, "the file holds figures only")
    ran = {c.name for c in validity.checks}
    result = {
        "schema_version": 2,
        "status": status,
        "failure_reason": reason,
        "validity": validity.model_dump(),
        "identity": identity,
        "workload": sections.pop("workload", {}),
        **sections,
        "provenance": {
            "inferx_version": __version__,
            **provenance,
            "imported_from": {
                "tool": tool,
                "path": str(path),
                "sha256": _sha256(path),
                "unknown": unknown,
                "not_judged": {
                    name: f"{no_detail} ({fallback})"
                    for name, fallback in VERDICT_CHECKS.items()
                    if name not in ran
                },
            },
        },
        "null_reasons": dict.fromkeys(unknown, why),
    }
    return parse_result(result)


def _inferencex_config(data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "engine": data.get("framework"),
        "model": data.get("model"),
        "parallelism": {k: data[k] for k in ("tp", "pp", "ep") if data.get(k) is not None},
        "workload": {"kind": "random", "isl": data.get("isl"), "osl": data.get("osl")},
        "engine_args": {"quantization": data.get("precision")},
        "cost": {"gpu_type": data.get("hw")},
        "image": data.get("image"),
    }


def import_inferencex(
    data: Mapping[str, Any], path: Path, index: int | None = None
) -> PointResultBase:
    """One InferenceX aggregate row (latencies in seconds) as an InferX result."""
    percentiles = _percentiles(data)
    latency = _empty_latency(percentiles) | {
        f"{m}_ms": _distribution(data, m, percentiles, scale=1000, suffix="").model_dump()
        for m in LATENCY_NAMES
    }
    num_gpus = int(data.get("tp") or 1) * int(data.get("pp") or 1) * int(data.get("pcp_size") or 1)
    conc = int(data["conc"])
    stem = path.stem.removeprefix("agg_")
    point_id = _slug(f"{stem}-{index}" if index is not None else stem)
    if not point_id.endswith(f"-c{conc}"):
        point_id = f"{point_id}-c{conc}"
    counts = _counts({}) | {"failed_by_kind": {}, "error_samples": []}
    offered = {"num_prompts": 0, "stopped_by": "num_prompts"}
    power = {
        k: v for k, v in data.items() if k.startswith(("power_", "avg_", "total_gpu", "joules"))
    }
    return _assemble(
        path,
        tool="InferenceX aggregate",
        identity={
            "point_id": point_id,
            "mode": "closed",
            "concurrency": conc,
            "max_concurrency": conc,
            "date": _mtime(path),
        },
        sections={
            "load": counts | offered,
            "throughput": _throughput(data, num_gpus) | {"request_throughput": None},
            "latency": latency,
        },
        provenance={
            "model_id": data.get("model"),
            "engine": {"name": str(data.get("framework") or "unknown")},
            "config": _inferencex_config(data),
            "extra": {"inferencex": {k: v for k, v in data.items() if not _is_latency(k)}} | power,
        },
    )


def _is_latency(key: str) -> bool:
    return any(key.endswith(f"_{m}") for m in (*LATENCY_NAMES, "intvty"))


def sniff(data: Any, path: Path | None = None) -> str | None:
    """Which tool wrote ``data``: ``vllm``, ``inferencex``, ``aiperf``, ``guidellm``,
    ``inference-perf`` or None."""
    rows = data if isinstance(data, list) else [data]
    if not rows or not all(isinstance(r, dict) for r in rows):
        return None
    if all("hw" in r and "conc" in r and "tput_per_gpu" in r for r in rows):
        return "inferencex"
    if (
        all("mean_ttft_ms" in r or "mean_e2el_ms" in r for r in rows)
        and "schema_version" not in rows[0]
    ):
        return "vllm"
    return sniff_tool(data, path)


def read_import(path: Path) -> Any:
    """The JSON of a file to import, read as strictly as results
    (:func:`inferx_core.results.read.read_json`); unusable: a user error naming the file."""
    if path.suffix == ".jsonl":  # AIPerf's per-request file is read beside its summary
        raise UserFacingError(
            f"{path}: a per-request JSONL is read beside its summary: give "
            "profile_export_aiperf.json (AIPerf), or the result JSON of the tool that wrote it"
        )
    try:
        return read_json(path)
    except OSError as exc:
        raise UserFacingError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ParseError as exc:
        raise UserFacingError(f"{path}: not a usable JSON file: {exc}") from None


def malformed(path: Path, exc: Exception) -> str:
    """Why a file that looks like a tool's could not be read (a field missing or of the
    wrong type: edited, truncated, or another version's format)."""
    if isinstance(exc, KeyError):
        return f"{path}: cannot import: the field {exc} is missing (edited or truncated?)"
    return f"{path}: cannot import: {exc} (edited, truncated or another version's format?)"


def import_points(path: Path) -> list[Imported]:
    """Every result of one file with its records, read whole before anything is written;
    a file that cannot be read is a user error naming it."""
    data = read_import(path)
    try:
        return list(imported_points(data, path))
    except (ValueError, KeyError, TypeError) as exc:
        raise UserFacingError(malformed(path, exc)) from None


def import_file(path: Path) -> Iterator[PointResultBase]:
    """Every result in one file of a tool InferX reads; a file of none is a user error."""
    return import_data(read_import(path), path)


def import_data(data: Any, path: Path) -> Iterator[PointResultBase]:
    """Every result in ``data``, read from ``path`` (see :func:`read_import`)."""
    for result, _ in imported_points(data, path):
        yield result


Imported = tuple[PointResultBase, list[RequestRecord] | None]


def imported_points(data: Any, path: Path) -> Iterator[Imported]:
    """Every result in ``data`` with its request records (None: the file has none)."""
    kind = sniff(data, path)
    if kind is None and read_with_summary(path):
        raise UserFacingError(
            f"{path}: inference-perf's per-request report is read with the run's summary "
            f"beside it: give {SUMMARY_NAME} (or the folder); nothing imported"
        )
    if kind is None:
        raise UserFacingError(
            f"{path}: neither a vLLM bench serve result (mean_ttft_ms, ...) nor another file "
            "InferX imports: an AIPerf profile_export_aiperf.json, a GuideLLM benchmarks.json, "
            "an inference-perf lifecycle report or an InferenceX aggregate (hw, conc, "
            "tput_per_gpu); nothing imported"
        )
    if kind == "vllm":
        yield _vllm_point(data, path)
    elif kind != "inferencex":
        yield from tool_points(kind, data, path)
    elif isinstance(data, list):
        for i, row in enumerate(data):
            yield import_inferencex(row, path, index=i), None
    else:
        yield import_inferencex(data, path), None
