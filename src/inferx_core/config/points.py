"""Load points and the ids of servers and points: readable, stable, unique per result file.

A server configuration is launched once and measured at each of its load
points; a point's id names its result file (``<id>.json``), so expansion,
resume, job planning and the runner all derive ids here, from the config
alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferx_core.config.deployment import deployment_shape
from inferx_core.config.models import LoadProfile, RunConfig, Workload
from inferx_core.config.trace_checks import untimed_session_trace
from inferx_core.errors import UserFacingError

__all__ = [
    "MAX_ID_BYTES",
    "LoadPoint",
    "PointIdError",
    "checked_id",
    "load_points",
    "point_id_for",
    "point_ids",
    "server_id",
    "slug",
]

#: Ids name files and folders (255 bytes), with suffixes such as ``.telemetry.jsonl``
#: and an export's ``power_validation_`` prefix.
MAX_ID_BYTES = 200


class PointIdError(UserFacingError, ValueError):
    """A server or point id too long to be a file name."""


def checked_id(point_id: str) -> str:
    """``point_id`` when it fits in a file name, else a :class:`PointIdError` saying what to do."""
    size = len(point_id.encode())
    if size > MAX_ID_BYTES:
        raise PointIdError(
            f"the id {point_id[:40]}... is {size} bytes; ids name result files (at most "
            f"{MAX_ID_BYTES}): set a shorter `name:` or `model:` (its last path part)"
        )
    return point_id


@dataclass(frozen=True)
class LoadPoint:
    """One load level: closed loop at ``concurrency``, open loop at ``request_rate``, or
    ``trace``: open loop at a trace's times (``max_concurrency`` its optional cap), or
    ``stages``: the load's stages in order."""

    concurrency: int | None = None
    request_rate: float | None = None
    max_concurrency: int | None = None
    trace: bool = False
    stages: int = 0  # how many load stages this point runs (0: none)

    @property
    def key(self) -> str:
        if self.stages:
            return f"stages{self.stages}"
        if self.trace:
            return "replay" + (f"-cap{self.max_concurrency}" if self.max_concurrency else "")
        if self.request_rate is not None:
            cap = f"-cap{self.max_concurrency}" if self.max_concurrency else ""
            return f"r{self.request_rate:g}{cap}"
        return f"c{self.concurrency}"


def load_points(load: LoadProfile, workload: Workload | None = None) -> list[LoadPoint]:
    if workload is not None and workload.kind == "trace" and not untimed_session_trace(workload):
        return [LoadPoint(trace=True, max_concurrency=load.max_concurrency)]
    if load.stages:
        return [LoadPoint(stages=len(load.stages), max_concurrency=load.max_concurrency)]
    if load.request_rate is not None:
        return [_rate_point(r, load) for r in load.request_rate]
    return [LoadPoint(concurrency=c) for c in load.concurrency or [1]]


def _rate_point(rate: float, load: LoadProfile) -> LoadPoint:
    """An open-loop level; an infinite rate is vLLM's "every request at once": no gaps,
    so the cap alone paces it (a closed loop at max_concurrency) or, without a cap, every
    prompt is in flight at once (a closed loop at num_prompts, which the config requires)."""
    if math.isinf(rate):
        return LoadPoint(concurrency=load.max_concurrency or load.num_prompts)
    return LoadPoint(request_rate=rate, max_concurrency=load.max_concurrency)


def slug(text: str) -> str:
    """A readable, filesystem-safe id fragment."""
    out = "".join(c if c.isalnum() or c in "-_." else "-" for c in text.strip())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-.") or "x"


def point_id_for(prefix: str, workload: Workload, point: LoadPoint) -> str:
    shape = f"isl{workload.isl}-osl{workload.osl}" if workload.kind == "random" else workload.kind
    if workload.kind == "trace" and workload.trace is not None:
        speed = f"-x{workload.trace_speedup:g}" if workload.trace_speedup != 1 else ""
        shape = f"trace-{workload.trace.stem}{speed}"
    if workload.kind == "multi-turn":
        isl, osl = workload.turn_isl or workload.isl, workload.turn_osl or workload.osl
        shape = f"multi-turn{workload.turns}-isl{isl}-osl{osl}"
    return checked_id(slug(f"{prefix}-{workload.api}-{shape}-{point.key}"))


def server_id(cfg: RunConfig) -> str:
    """Readable and unique per server configuration: [name-]model-engine-parallelism
    [-kvDTYPE][-spec-METHOD-nTOKENS]."""
    par = cfg.parallelism
    model = cfg.model.rstrip("/").rsplit("/", 1)[-1]
    parts = [*([cfg.name] if cfg.name else []), model, cfg.engine]
    if cfg.deployment is not None:  # each role's own shape, not the base's parallelism
        parts.append(deployment_shape(cfg.deployment, par))
        return checked_id(slug("-".join(parts + _spec_part(cfg))))
    parts.append(f"tp{par.tp}")
    if par.pp > 1:
        parts.append(f"pp{par.pp}")
    if par.dp > 1:
        parts.append(f"dp{par.dp}")
    if par.ep:
        parts.append(f"ep{par.ep}")
    if cfg.kv_cache_dtype:
        parts.append(f"kv{cfg.kv_cache_dtype}")
    return checked_id(slug("-".join(parts + _spec_part(cfg))))


def _spec_part(cfg: RunConfig) -> list[str]:
    """``spec-mtp-n3`` for speculative decoding (InferenceX's names carry ``spec-mtp``)."""
    spec = cfg.speculative
    return [f"spec-{spec.method}-n{spec.num_speculative_tokens}"] if spec is not None else []


def point_ids(cfg: RunConfig) -> list[tuple[LoadPoint, str]]:
    """Every load point of a server configuration with its id, in run order."""
    sid = server_id(cfg)
    return [(p, point_id_for(sid, cfg.workload, p)) for p in load_points(cfg.load, cfg.workload)]
