"""The metadata of an InferenceX aggregate: what InferX knows, defaults, and ``--set`` values.

InferenceX's ``process_result.py`` takes these from environment variables
(``RUNNER_TYPE``, ``FRAMEWORK``, ``PRECISION``, ``TP``, ``EP_SIZE``, ...).
InferX fills each from the result where it knows it (platform, engine,
precision options, parallelism, image, ISL/OSL), from a stated default where
the engines' own default applies (no speculative decoding, EP 1, ...), and
``--set key=value`` overrides any of them. A field with neither is an error
that names the ``--set`` to add.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from inferx_core.errors import UserFacingError
from inferx_core.results.model import PointResultBase

Origin = Literal["result", "default", "set"]

#: ``--set`` names, their process_result.py variable, and their JSON type there.
FIELDS: dict[str, tuple[str, type]] = {
    "hw": ("RUNNER_TYPE", str),
    "framework": ("FRAMEWORK", str),
    "precision": ("PRECISION", str),
    "spec_decoding": ("SPEC_DECODING", str),
    "disagg": ("DISAGG", bool),
    "model_prefix": ("MODEL_PREFIX", str),
    "image": ("IMAGE", str),
    "isl": ("ISL", int),
    "osl": ("OSL", int),
    "tp": ("TP", int),
    "ep": ("EP_SIZE", int),
    "dp_attention": ("DP_ATTENTION", str),
    "pp": ("PP_SIZE", int),
    "dcp_size": ("DCP_SIZE", int),
    "pcp_size": ("PCP_SIZE", int),
    "recipe_fingerprint": ("RECIPE_FINGERPRINT", str),
    "kv_p2p_transfer": ("KV_P2P_TRANSFER", str),
    # Multi-node (disaggregated prefill/decode) results: process_result.py's IS_MULTINODE branch
    "multinode": ("IS_MULTINODE", bool),
    "prefill_gpus": ("PREFILL_GPUS", int),
    "decode_gpus": ("DECODE_GPUS", int),
    **{
        f"{role}_{name}": (f"{role.upper()}_{var}", kind)
        for role in ("prefill", "decode")
        for name, var, kind in (
            ("num_workers", "NUM_WORKERS", int),
            ("tp", "TP", int),
            ("pp", "PP_SIZE", int),
            ("dcp_size", "DCP_SIZE", int),
            ("pcp_size", "PCP_SIZE", int),
            ("ep", "EP", int),
            ("dp_attention", "DP_ATTN", str),
            ("hw", "HARDWARE", str),
        )
    },
}
#: Needed only by single-node aggregates, and only by multi-node ones.
SINGLE_NODE_ONLY = frozenset({"tp", "ep", "dp_attention", "pp", "dcp_size", "pcp_size"})
MULTINODE_ONLY = frozenset(k for k in FIELDS if k.startswith(("prefill_", "decode_")))
#: Optional even then: omitted from the aggregate when absent (homogeneous hardware).
OPTIONAL = frozenset({"kv_p2p_transfer", "prefill_hw", "decode_hw"})
#: The engines' own defaults where a run does not say otherwise.
DEFAULTS: dict[str, Any] = {
    "spec_decoding": "none",
    "disagg": False,
    "image": "",
    "ep": 1,
    "dp_attention": "false",
    "pp": 1,
    "dcp_size": 1,
    "pcp_size": 1,
    "recipe_fingerprint": "",
    "multinode": False,
    **{f"{r}_{k}": 1 for r in ("prefill", "decode") for k in ("pp", "dcp_size", "pcp_size")},
}
_FRAMEWORKS = {"trtllm": "trt"}  # InferenceX's names where they differ from InferX's
_PRECISIONS = (
    (re.compile(r"fp4|nvfp4|mxfp4"), "fp4"),
    (re.compile(r"fp8"), "fp8"),
    (re.compile(r"awq|gptq|int4|w4a16"), "int4"),
    (re.compile(r"int8|w8a8"), "int8"),
    (re.compile(r"bfloat16|bf16"), "bf16"),
    (re.compile(r"float16|fp16|half"), "fp16"),
    (re.compile(r"float32|fp32"), "fp32"),
)


@dataclass(frozen=True)
class InferenceXMetadata:
    """Resolved metadata, each value with where it came from."""

    values: dict[str, Any]
    origins: dict[str, Origin] = field(default_factory=dict)

    def describe(self) -> str:
        return ", ".join(f"{k}={self.values[k]!r} ({self.origins[k]})" for k in self.values)


def parse_set(pairs: list[str] | tuple[str, ...], flag: str = "--set") -> dict[str, str]:
    """``["hw=h200", ...]`` as a dict; a malformed pair is a user error naming it."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserFacingError(f"{flag} {pair!r}: expected KEY=VALUE, e.g. {flag} hw=h200")
        out[key] = value.strip()
    return out


def _coerce(key: str, raw: str) -> Any:
    kind = FIELDS[key][1]
    if kind is bool:
        return raw.lower() == "true"
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise UserFacingError(f"--set {key}={raw}: {key} must be an integer") from None
    return raw


def _hardware(platform: Mapping[str, Any] | None) -> str | None:
    """InferenceX's runner name for the accelerator (``NVIDIA H200`` -> ``h200``)."""
    if platform is None:
        return None
    accelerators = platform.get("accelerators") or []
    if not accelerators:
        return "cpu"
    name = str(accelerators[0].get("name") or "")
    name = re.sub(r"^(nvidia|amd|instinct|google|aws)\s+", "", name.strip(), flags=re.I)
    name = re.sub(r"^(instinct|tesla)\s+", "", name, flags=re.I)
    return re.sub(r"\s+", "-", name.lower()) or None


def _precision(config: Mapping[str, Any]) -> str | None:
    options = [str((config.get("engine_args") or {}).get("quantization") or "")]
    options += [str(config.get("quantization") or ""), str(config.get("dtype") or "")]
    for option in options:
        for pattern, name in _PRECISIONS:
            if option and pattern.search(option.lower()):
                return name
    return None


def known_from_result(result: PointResultBase) -> dict[str, Any]:
    """What the result itself says (None where it does not)."""
    prov = result.provenance
    config: Mapping[str, Any] = prov.config or {}
    workload = config.get("workload") or {}
    par = config.get("parallelism") or {}
    engine = prov.engine.name if prov.engine is not None else config.get("engine")
    random_workload = workload.get("kind") in (None, "random", "lognormal")
    tp = par.get("tp") or (result.throughput.num_gpus if result.throughput else None)
    launch = prov.launch or {}
    model = str(prov.model_id or config.get("model") or "")
    roles = _deployment_roles(config.get("deployment"), par) or _role_gpus(result)
    return roles | {
        "hw": _hardware(prov.platform),
        "framework": _FRAMEWORKS.get(str(engine), engine) if engine else None,
        "precision": _precision(config),
        "spec_decoding": _spec_decoding(config),
        "model_prefix": model.rstrip("/").rsplit("/", 1)[-1].lower() or None,
        "image": (launch.get("spec") or {}).get("image") or config.get("image"),
        "isl": workload.get("isl") if random_workload else None,
        "osl": workload.get("osl") if random_workload else None,
        "tp": tp,
        "ep": par.get("ep"),
        "pp": par.get("pp"),
        "dp_attention": str(par["dp_attention"]).lower() if "dp_attention" in par else None,
    }


def _spec_decoding(config: Mapping[str, Any]) -> str | None:
    """The config's speculative method (``mtp``...) as InferenceX's ``spec_decoding``; None
    (the default ``none``) when the run asked for none."""
    spec = config.get("speculative")
    method = spec.get("method") if isinstance(spec, Mapping) else None
    return str(method) if method else None


def _role_gpus(result: PointResultBase) -> dict[str, Any]:
    """A disaggregated result's prefill/decode GPU counts (the per-GPU figures' own)."""
    tput = result.throughput
    if tput is None or tput.num_prefill_gpus is None or tput.num_decode_gpus is None:
        return {}
    return {
        "multinode": True,
        "disagg": True,
        "prefill_gpus": tput.num_prefill_gpus,
        "decode_gpus": tput.num_decode_gpus,
    }


def _role_shape(role: str, group: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    par = group.get("parallelism") or base
    tp, pp, dp = (int(par.get(k) or 1) for k in ("tp", "pp", "dp"))
    return {
        f"{role}_num_workers": int(group.get("replicas") or 1),
        f"{role}_tp": tp,
        f"{role}_pp": pp,
        f"{role}_ep": int(par.get("ep") or 1),
        f"{role}_dp_attention": str(bool(par.get("dp_attention"))).lower(),
        f"{role}_gpus": int(group.get("replicas") or 1) * tp * pp * dp,
    }


def _deployment_roles(
    deployment: Mapping[str, Any] | None, base: Mapping[str, Any]
) -> dict[str, Any]:
    """A deployment's roles as InferenceX's multi-node fields.

    Disaggregated: prefill and decode as they are. Replicas without
    disaggregation (``wide_ep``'s ``both``) are InferenceX's multi-node
    aggregate without decode workers: every GPU counts as a prefill GPU and
    ``decode_gpus`` is 0, so the per-GPU figures divide by every replica's GPUs.
    The router counts no GPU.
    """
    if not isinstance(deployment, Mapping):
        return {}
    groups = {g.get("role"): g for g in deployment.get("roles") or () if isinstance(g, Mapping)}
    disagg = deployment.get("kind") == "disaggregated"
    out: dict[str, Any] = {"multinode": True, "disagg": disagg}
    if disagg:
        for role in ("prefill", "decode"):
            out |= _role_shape(role, groups.get(role) or {}, base)
    else:
        out |= _role_shape("prefill", groups.get("both") or {}, base)
        out |= {"decode_gpus": 0, "decode_num_workers": 0, "decode_tp": 0, "decode_ep": 0}
        out["decode_dp_attention"] = "false"
    return out


def _needed(key: str, multinode: bool) -> bool:
    if key in OPTIONAL:
        return False
    return key not in (SINGLE_NODE_ONLY if multinode else MULTINODE_ONLY)


def resolve_metadata(
    result: PointResultBase, overrides: Mapping[str, str] | None = None, *, flag: str = "--set"
) -> InferenceXMetadata:
    """The aggregate's metadata for ``result``; raises naming every field still missing
    and the command's own flag for it (``--set``; ``--export-set`` in bench and run)."""
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(FIELDS))
    if unknown:
        raise UserFacingError(
            f"{flag} {', '.join(unknown)}: not an InferenceX field; known: {', '.join(FIELDS)}"
        )
    known = known_from_result(result)
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    missing = []
    multinode = (
        _coerce("multinode", overrides["multinode"])
        if "multinode" in overrides
        else bool(known.get("multinode", False))
    )
    for key in FIELDS:
        if key in overrides:
            values[key], origins[key] = _coerce(key, overrides[key]), "set"
        elif known.get(key) is not None:
            values[key], origins[key] = known[key], "result"
        elif key in DEFAULTS:
            values[key], origins[key] = DEFAULTS[key], "default"
        elif _needed(key, multinode):
            missing.append(key)
    if missing:
        sets = " ".join(f"{flag} {k}=..." for k in missing)
        raise UserFacingError(
            f"{result.point_id}: the InferenceX metadata {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not in the result; add {sets}"
        )
    return InferenceXMetadata(values, origins)
