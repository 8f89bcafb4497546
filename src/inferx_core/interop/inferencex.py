"""A point as InferenceX's aggregate (``agg_<point_id>.json``) and its power validation sidecar.

The aggregate is what InferenceX's ``utils/process_result.py`` writes from a
vLLM-format result (:mod:`inferx_core.interop.vllm_bench`) and its metadata:

- identity and parallelism fields (``hw``, ``conc``, ``model``, ``tp``, ...);
- ``tput_per_gpu``, ``output_tput_per_gpu``, ``input_tput_per_gpu`` over
  ``tp * pp * pcp_size`` GPUs;
- every vLLM key ending in ``ms`` again in seconds without ``_ms``;
- every vLLM key containing ``tpot`` as interactivity ``1000 / value``
  under the name with ``tpot`` replaced by ``intvty`` (so ``std_intvty`` is
  ``1000 / std_tpot_ms``, a quirk of the contract kept as it is).

Then the power fields ``utils/aggregate_power.py`` adds:
``power_metric_schema_version`` 2, numeric ``power_valid`` (1/0) and, when
valid, whole-deployment ``avg_power_w`` (per GPU), ``avg_total_gpu_power_w``,
``total_gpu_energy_j`` and ``joules_per_{successful_query,input,output,total}_token``
over the benchmark window, rounded as it rounds them. The reasons for an
invalid verdict go to ``power_validation_<point_id>.json`` (InferenceX's
sidecar) and, for InferenceX-app, to ``power_invalid_reasons``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from inferx_core.interop.metadata import InferenceXMetadata
from inferx_core.results.model import PointResultBase

POWER_METRIC_SCHEMA_VERSION = 2
MAX_SAMPLE_GAP_S = 3.0  # aggregate_power.py's default


class NotExportable(ValueError):
    """This point cannot be written in the format; the message says why."""


def _identity(vllm: Mapping[str, Any], meta: InferenceXMetadata) -> dict[str, Any]:
    v = meta.values
    conc = vllm.get("max_concurrency")
    if conc is None:
        raise NotExportable(
            "InferenceX aggregates are keyed by concurrency; this open-loop point had no "
            "max_concurrency cap"
        )
    out: dict[str, Any] = {
        "hw": v["hw"],
        "conc": int(conc),
        "image": v["image"],
        "model": vllm["model_id"],
        "infmax_model_prefix": v["model_prefix"],
        "framework": v["framework"],
        "precision": v["precision"],
        "spec_decoding": v["spec_decoding"],
        "disagg": bool(v["disagg"]),
        "recipe_fingerprint": v["recipe_fingerprint"],
        "isl": int(v["isl"]),
        "osl": int(v["osl"]),
    }
    if v.get("kv_p2p_transfer"):
        out["kv_p2p_transfer"] = v["kv_p2p_transfer"]
    return out


def expected_gpus(meta: InferenceXMetadata) -> int:
    """The GPUs the aggregate's per-GPU figures and power count."""
    v = meta.values
    if v.get("multinode"):
        return int(v["prefill_gpus"]) + int(v["decode_gpus"])
    return int(v["tp"]) * int(v["pp"]) * int(v["pcp_size"])


def _multi_node(vllm: Mapping[str, Any], meta: InferenceXMetadata) -> dict[str, Any]:
    """process_result.py's IS_MULTINODE branch (disaggregated prefill/decode)."""
    v = meta.values
    prefill, decode = int(v["prefill_gpus"]), int(v["decode_gpus"])
    if prefill <= 0:
        raise NotExportable("multi-node aggregates need at least one prefill GPU (prefill_gpus)")
    if bool(v.get("prefill_hw")) != bool(v.get("decode_hw")):
        raise NotExportable("give prefill_hw and decode_hw together (or neither)")
    sizes = [
        int(v[f"{r}_{k}"]) for r in ("prefill", "decode") for k in ("pp", "dcp_size", "pcp_size")
    ]
    if min(sizes) <= 0:
        raise NotExportable("multi-node PP, DCP and PCP sizes must be positive integers")
    has_decode = decode > 0
    out: dict[str, Any] = {"is_multinode": True}
    for role in ("prefill", "decode"):
        live = role == "prefill" or has_decode  # no decode GPUs: InferenceX zeroes its shape
        for key, absent in (("tp", 0), ("pp", 1), ("dcp_size", 1), ("pcp_size", 1), ("ep", 0)):
            out[f"{role}_{key}"] = int(v[f"{role}_{key}"]) if live else absent
        out[f"{role}_dp_attention"] = v[f"{role}_dp_attention"]
        out[f"{role}_num_workers"] = int(v[f"{role}_num_workers"])
    total, output = float(vllm["total_token_throughput"]), float(vllm["output_throughput"])
    out |= {
        "num_prefill_gpu": prefill,
        "num_decode_gpu": decode,
        "tput_per_gpu": total / (prefill + decode),
        "output_tput_per_gpu": output / (decode if has_decode else prefill + decode),
        "input_tput_per_gpu": (total - output) / prefill,
    }
    if v.get("prefill_hw"):
        out |= {"prefill_hw": v["prefill_hw"], "decode_hw": v["decode_hw"]}
    return out


def _single_node(vllm: Mapping[str, Any], meta: InferenceXMetadata) -> dict[str, Any]:
    v = meta.values
    if v.get("multinode"):
        return _multi_node(vllm, meta)
    if v["disagg"]:
        raise NotExportable(
            "disaggregated mode requires a multi-node setup: --set multinode=true with the "
            "prefill_*/decode_* fields"
        )
    num_gpus = int(v["tp"]) * int(v["pp"]) * int(v["pcp_size"])
    total = float(vllm["total_token_throughput"])
    output = float(vllm["output_throughput"])
    return {
        "is_multinode": False,
        "tp": int(v["tp"]),
        "pp": int(v["pp"]),
        "dcp_size": int(v["dcp_size"]),
        "pcp_size": int(v["pcp_size"]),
        "ep": int(v["ep"]),
        "dp_attention": v["dp_attention"],
        "tput_per_gpu": total / num_gpus,
        "output_tput_per_gpu": output / num_gpus,
        "input_tput_per_gpu": (total - output) / num_gpus,
    }


def _latency_fields(vllm: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in vllm.items():
        if key.endswith("ms"):
            out[key.replace("_ms", "")] = float(value) / 1000.0
        if "tpot" in key:
            if not float(value):
                raise NotExportable(
                    f"{key} is 0 (no request with more than one token, or their tokens "
                    "arrived coalesced in one read): InferenceX's interactivity 1000/TPOT "
                    "is undefined"
                )
            out[key.replace("_ms", "").replace("tpot", "intvty")] = 1000.0 / float(value)
    return out


def inferencex_aggregate(vllm: Mapping[str, Any], meta: InferenceXMetadata) -> dict[str, Any]:
    """The aggregate ``process_result.py`` writes from the vLLM result ``vllm`` (no power yet)."""
    return _identity(vllm, meta) | _single_node(vllm, meta) | _latency_fields(vllm)


def _power_reasons(flat: Mapping[str, Any], vllm: Mapping[str, Any], expected: int) -> list[str]:
    reasons: list[str] = []
    start, end = vllm.get("benchmark_start_time_unix"), vllm.get("benchmark_end_time_unix")
    if not isinstance(start, float) or not isinstance(end, float) or end <= start:
        reasons.append("invalid_benchmark_window")
    if not flat.get("power_valid") or flat.get("gpu_energy_j") is None:
        reasons.append("power_not_measured")
    elif len(flat.get("gpu_ids") or ()) != expected:
        reasons.append("expected_gpu_count_mismatch")
    gap = flat.get("max_sample_gap_s")
    if gap is not None and gap > MAX_SAMPLE_GAP_S:
        reasons.append("sampling_gap_exceeded")
    for key, code in (
        ("completed", "invalid_successful_query_count"),
        ("total_input_tokens", "invalid_input_token_count"),
        ("total_output_tokens", "invalid_output_token_count"),
    ):
        if not vllm.get(key):
            reasons.append(code)
    return reasons


def power_fields(
    result: PointResultBase, vllm: Mapping[str, Any], meta: InferenceXMetadata
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the aggregate's power fields, the validation sidecar) for one point."""
    expected = expected_gpus(meta)
    flat = result.flat()
    reasons = _power_reasons(flat, vllm, expected)
    fields: dict[str, Any] = {
        "power_metric_schema_version": POWER_METRIC_SCHEMA_VERSION,
        "power_valid": 0 if reasons else 1,
    }
    metrics: dict[str, float] = {}
    if not reasons:
        energy = float(flat["gpu_energy_j"])
        window = float(vllm["benchmark_end_time_unix"]) - float(vllm["benchmark_start_time_unix"])
        n_in, n_out = int(vllm["total_input_tokens"]), int(vllm["total_output_tokens"])
        metrics = {
            "avg_power_w": energy / window / expected,
            "avg_total_gpu_power_w": energy / window,
            "total_gpu_energy_j": energy,
            "joules_per_successful_query": energy / int(vllm["completed"]),
            "joules_per_input_token": energy / n_in,
            "joules_per_output_token": energy / n_out,
            "joules_per_total_token": energy / (n_in + n_out),
        }
        for key, value in metrics.items():
            fields[key] = round(value, 3 if key.endswith(("_w", "_j")) else 6)
    else:
        fields["power_invalid_reasons"] = reasons
    sidecar = {
        "schema_version": 1,
        "power_valid": not reasons,
        "reasons": reasons,
        "telemetry_source": f"inferx:{flat.get('power_source')}",
        "benchmark_window": {
            "start_time_unix": vllm.get("benchmark_start_time_unix"),
            "end_time_unix": vllm.get("benchmark_end_time_unix"),
            "reported_duration_s": vllm.get("duration"),
        },
        "integration_method": "inferx_trapezoid_over_the_measured_window",
        "expected_gpu_count": expected,
        "observed_gpu_count": len(flat.get("gpu_ids") or ()),
        "observed_gpu_ids": [str(g) for g in flat.get("gpu_ids") or ()],
        "per_gpu_energy_j": flat.get("gpu_energy_j_per_gpu") or {},
        "inferx_reason": flat.get("power_invalid_reason"),
        "metrics": {k: round(x, 6) for k, x in metrics.items() if math.isfinite(x)},
    }
    return fields, sidecar
