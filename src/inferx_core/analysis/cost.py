"""Cost per million tokens and tokens per MW, from price and power per GPU.

Pure functions, no I/O. Figures from DOMAIN.md section 4 (InferenceX):

- $/GPU/hour by tier: ``owner`` (own the hardware, 4-year life),
  ``neocloud``, ``rental`` (3-year rental).
- All-in provisioned kW per GPU (GPU + its share of host, network, cooling).

Cost per million tokens = ($/GPU/hour) / (tok/s/GPU x 3600 / 1e6). Total,
input and output costs each divide the whole GPU-hour by that kind of
token's rate (InferenceX's convention: they are not a split of one bill).

Tokens/s per MW comes two ways, labelled apart:

- *provisioned*: tok/s/GPU x 1000 / (kW per GPU), the capacity a data centre
  of 1 MW all-in would deliver;
- *measured*: tokens/s / (measured average GPU power) over the benchmark
  window, only where the result's power data is valid (``power_valid``).
  That is chip power, not wall power (a whole node draws ~1.3-1.5x more).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from inferx_core.results.model import PointResultBase

Tier = Literal["owner", "neocloud", "rental"]
TIERS: tuple[Tier, ...] = ("owner", "neocloud", "rental")

#: $/GPU/hour (owner, neocloud, rental), InferenceX reference figures.
USD_PER_GPU_HOUR: dict[str, dict[Tier, float]] = {
    "H100": {"owner": 1.30, "neocloud": 1.69, "rental": 1.30},
    "H200": {"owner": 1.41, "neocloud": 1.74, "rental": 1.60},
    "B200": {"owner": 1.95, "neocloud": 2.34, "rental": 2.90},
    "GB200": {"owner": 2.21, "neocloud": 2.75, "rental": 3.30},
    "MI300X": {"owner": 1.12, "neocloud": 1.40, "rental": 1.55},
    "MI325X": {"owner": 1.28, "neocloud": 1.59, "rental": 1.80},
    "MI355X": {"owner": 1.48, "neocloud": 1.90, "rental": 2.10},
}

#: All-in provisioned kW per GPU, InferenceX reference figures.
KW_PER_GPU: dict[str, float] = {
    "H100": 1.73,
    "H200": 1.73,
    "B200": 2.17,
    "GB200": 2.10,
    "MI300X": 1.79,
    "MI325X": 2.18,
    "MI355X": 2.65,
}

GPU_TYPES: tuple[str, ...] = tuple(USD_PER_GPU_HOUR)

# Whole tokens only: "GH200" is not an H200 and "GB200" is not a B200.
_GPU_RE = re.compile(r"(?<![A-Z0-9])(GB200|B200|H200|H100|MI300X|MI325X|MI355X)(?![A-Z0-9])")


def cost_per_million_tokens(usd_per_gpu_hour: float, tok_s_per_gpu: float) -> float | None:
    """$ per million tokens = ($/GPU/hour) / (tok/s/GPU * 3600 / 1e6); None when no tokens."""
    if usd_per_gpu_hour < 0:
        raise ValueError("usd_per_gpu_hour must be >= 0")
    if tok_s_per_gpu < 0:
        raise ValueError("tok_s_per_gpu must be >= 0")
    if tok_s_per_gpu == 0:
        return None
    return usd_per_gpu_hour / (tok_s_per_gpu * 3600.0 / 1e6)


def tokens_per_mw(tok_s_per_gpu: float, kw_per_gpu: float) -> float:
    """Tokens/s per MW of provisioned power = tok/s/GPU * 1000 / (kW per GPU)."""
    if kw_per_gpu <= 0:
        raise ValueError("kw_per_gpu must be > 0")
    if tok_s_per_gpu < 0:
        raise ValueError("tok_s_per_gpu must be >= 0")
    return tok_s_per_gpu * 1000.0 / kw_per_gpu


def gpu_type_from_name(name: str | None) -> str | None:
    """The table's GPU type in a product name, else None.

    >>> gpu_type_from_name("NVIDIA H200"), gpu_type_from_name("AMD Instinct MI300X")
    ('H200', 'MI300X')
    >>> gpu_type_from_name("NVIDIA H100 80GB HBM3"), gpu_type_from_name("NVIDIA GH200 480GB")
    ('H100', None)
    """
    if not name:
        return None
    text = name.upper().replace("_", " ")
    # "H100-SXM5", "MI300X-OAM": a hyphen separates words here.
    found = {m.group(1) for m in _GPU_RE.finditer(text.replace("-", " "))}
    return found.pop() if len(found) == 1 else None


def normalize_gpu_type(text: str) -> str:
    """A user-given GPU type in the table's spelling ("h200" -> "H200"); unknown ones as given."""
    found = gpu_type_from_name(text)
    if found:
        return found
    return text.strip().upper() if text.strip().upper() in GPU_TYPES else text.strip()


@dataclass(frozen=True)
class CostOptions:
    """What the user said about price, power and GPU counts (all optional).

    ``usd_per_gpu_hour``/``kw_per_gpu``: a number for every GPU type (key
    ``"*"``) and/or per type (``{"H200": 2.5}``); they override the result's
    config and the built-in tables. ``num_gpus`` is the count assumed where a
    result does not know its GPUs (a bench against an external server).
    """

    gpu_type: str | None = None
    tier: Tier | None = None
    usd_per_gpu_hour: Mapping[str, float] | None = None
    kw_per_gpu: Mapping[str, float] | None = None
    num_gpus: int | None = None
    # Pareto frontiers leave invalid points out (their numbers failed a validity check)
    # unless asked (`inferx report --include-invalid`).
    include_invalid: bool = False

    def __post_init__(self) -> None:
        if self.tier is not None and self.tier not in TIERS:
            raise ValueError(f"tier must be one of {TIERS}, got {self.tier!r}")
        if self.num_gpus is not None and (
            isinstance(self.num_gpus, bool) or int(self.num_gpus) != self.num_gpus
        ):
            raise ValueError(f"num_gpus must be an integer, got {self.num_gpus!r}")
        if self.num_gpus is not None and self.num_gpus < 1:
            raise ValueError(f"num_gpus must be >= 1, got {self.num_gpus}")
        for label, table in (("usd_per_gpu_hour", self.usd_per_gpu_hour), ("kw", self.kw_per_gpu)):
            for key, value in (table or {}).items():
                if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                    raise ValueError(f"{label} for {key!r} must be a number > 0, got {value!r}")
        # keys in the table's spelling ("h200" -> "H200"), so the same type given twice
        # ("h200=2", "H200=3") is one entry, the last one winning, for every caller
        for name in ("usd_per_gpu_hour", "kw_per_gpu"):
            table = getattr(self, name)
            if table:
                object.__setattr__(self, name, _by_type(table))


def _by_type(table: Mapping[str, float]) -> dict[str, float]:
    return {"*" if k == "*" else normalize_gpu_type(k): v for k, v in table.items()}


def _lookup(table: Mapping[str, float] | None, gpu_type: str | None) -> float | None:
    if not table:
        return None
    if gpu_type is not None:
        for key, value in table.items():
            if key != "*" and normalize_gpu_type(key) == gpu_type:
                return float(value)
    return float(table["*"]) if "*" in table else None


def _cost_config(result: PointResultBase) -> Mapping[str, Any]:
    # config stays a free-form dict in the model (the run's own schema)
    return (result.provenance.config or {}).get("cost") or {}


def _accelerators_used(result: PointResultBase) -> list[str]:
    platform: Mapping[str, Any] = result.provenance.platform or {}
    accs = [a for a in platform.get("accelerators") or [] if isinstance(a, Mapping)]
    used = ((result.provenance.launch or {}).get("spec") or {}).get("gpu_ids")
    if used is None:
        used = result.metric("gpu_ids")
    if used:
        picked = [a for a in accs if a.get("index") in set(used)]
        if picked:
            accs = picked
    return [str(a.get("name") or "") for a in accs]


def resolve_gpu_type(result: PointResultBase, options: CostOptions) -> tuple[str | None, str]:
    """(GPU type, where it came from): the user's, the config's cost.gpu_type, else the
    platform's accelerator names. Unknown: (None, why)."""
    if options.gpu_type:
        return normalize_gpu_type(options.gpu_type), "user (--gpu-type)"
    cfg_type = _cost_config(result).get("gpu_type")
    if cfg_type:
        return normalize_gpu_type(str(cfg_type)), "config cost.gpu_type"
    names = _accelerators_used(result)
    types = {gpu_type_from_name(n) for n in names}
    if not names:
        if result.provenance.platform is not None:
            return None, "no GPU on the platform (CPU run)"
        return None, "no accelerator in the result (give --gpu-type or cost.gpu_type)"
    if None in types or len(types) != 1:
        shown = ", ".join(sorted(set(names)))
        return None, f"GPU type not in the price table: {shown} (give --gpu-type)"
    return types.pop(), "platform"


def resolve_num_gpus(result: PointResultBase, options: CostOptions) -> tuple[int, str]:
    """GPUs the per-GPU figures divide by: the result's own count, else --num-gpus
    (default 1), labelled as assumed."""
    n = result.metric("num_gpus")
    if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
        return n, "result"
    if options.num_gpus is not None:
        return int(options.num_gpus), "assumed (--num-gpus)"
    return 1, "assumed (default 1; give --num-gpus)"


def resolve_price(
    result: PointResultBase, gpu_type: str | None, options: CostOptions
) -> tuple[float | None, str]:
    """$/GPU/hour and its source: user > config cost.usd_per_gpu_hour > table[type][tier]."""
    user = _lookup(options.usd_per_gpu_hour, gpu_type)
    if user is not None:
        return user, "user"
    cost = _cost_config(result)
    if cost.get("usd_per_gpu_hour"):
        return float(cost["usd_per_gpu_hour"]), "config"
    tier: Tier = options.tier or cost.get("tier") or "owner"
    if gpu_type in USD_PER_GPU_HOUR:
        return USD_PER_GPU_HOUR[gpu_type][tier], f"table {gpu_type} {tier}"
    return None, "no price (unknown GPU type; give --usd-per-gpu-hour)"


def resolve_kw(
    result: PointResultBase, gpu_type: str | None, options: CostOptions
) -> tuple[float | None, str]:
    """Provisioned kW per GPU and its source: user > config cost.kw_per_gpu > table."""
    user = _lookup(options.kw_per_gpu, gpu_type)
    if user is not None:
        return user, "user"
    cost = _cost_config(result)
    if cost.get("kw_per_gpu"):
        return float(cost["kw_per_gpu"]), "config"
    if gpu_type in KW_PER_GPU:
        return KW_PER_GPU[gpu_type], f"table {gpu_type}"
    return None, "no kW figure (unknown GPU type; give --kw-per-gpu)"


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def per_gpu_throughputs(
    result: PointResultBase, num_gpus: int, source: str
) -> dict[str, float | None]:
    """tput_per_gpu, output_tput_per_gpu, input_tput_per_gpu: the result's own where it
    counted its GPUs, else its totals divided by the assumed ``num_gpus``."""
    flat = result.flat()  # the figures by their documented flat names
    if source == "result":
        return {
            k: _num(flat.get(k))
            for k in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu")
        }
    total = _num(flat.get("total_token_throughput"))
    output = _num(flat.get("output_throughput"))
    duration = _num(flat.get("duration"))
    inputs = _num(flat.get("total_input_tokens"))
    input_tput = inputs / duration if inputs is not None and duration else None
    if input_tput is None and total is not None and output is not None:
        input_tput = total - output
    return {
        "tput_per_gpu": None if total is None else total / num_gpus,
        "output_tput_per_gpu": None if output is None else output / num_gpus,
        "input_tput_per_gpu": None if input_tput is None else input_tput / num_gpus,
    }


def _cost(price: float | None, rate: float | None) -> float | None:
    if price is None or rate is None or rate < 0:
        return None
    return cost_per_million_tokens(price, rate)


def measured_tokens_per_mw(result: PointResultBase) -> tuple[float | None, float | None, str]:
    """(total, output) tokens/s per MW of measured GPU power, and why when None."""
    flat = result.flat()  # the figures by their documented flat names
    if flat.get("power_valid") is not True:
        why = flat.get("power_invalid_reason") or "no valid power measurement"
        return None, None, f"power not valid: {why}"
    watts = _num(flat.get("gpu_power_avg_w"))
    if watts is None or watts <= 0:
        return None, None, "no average GPU power"
    total = _num(flat.get("total_token_throughput"))
    output = _num(flat.get("output_throughput"))
    mw = watts / 1e6
    return (
        None if total is None else total / mw,
        None if output is None else output / mw,
        "measured GPU power (chip, not wall)",
    )


def cost_fields(result: PointResultBase, options: CostOptions | None = None) -> dict[str, Any]:
    """Every cost and power figure for one result, with the source of each input."""
    options = options or CostOptions()
    gpu_type, gpu_src = resolve_gpu_type(result, options)
    num_gpus, num_src = resolve_num_gpus(result, options)
    rates = per_gpu_throughputs(result, num_gpus, num_src)
    price, price_src = resolve_price(result, gpu_type, options)
    kw, kw_src = resolve_kw(result, gpu_type, options)
    tput = rates["tput_per_gpu"]
    out_tput = rates["output_tput_per_gpu"]
    mw_total, mw_output, mw_src = measured_tokens_per_mw(result)
    return {
        "gpu_type": gpu_type,
        "gpu_type_source": gpu_src,
        "num_gpus": num_gpus,
        "num_gpus_source": num_src,
        **rates,
        "usd_per_gpu_hour": price,
        "price_source": price_src,
        "cost_per_mtok_total": _cost(price, tput),
        "cost_per_mtok_input": _cost(price, rates["input_tput_per_gpu"]),
        "cost_per_mtok_output": _cost(price, out_tput),
        "kw_per_gpu": kw,
        "kw_source": kw_src,
        "tok_s_per_mw_provisioned": None if kw is None or tput is None else tokens_per_mw(tput, kw),
        "output_tok_s_per_mw_provisioned": None
        if kw is None or out_tput is None
        else tokens_per_mw(out_tput, kw),
        "tok_s_per_mw_measured": mw_total,
        "output_tok_s_per_mw_measured": mw_output,
        "measured_power_basis": mw_src,
    }
