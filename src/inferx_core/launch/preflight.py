"""Preflight waits a LaunchSpec asks for, checked (bounded) before the engine starts.

``port_free``: nothing listens on the port. ``path_unlocked``: nobody holds
an exclusive flock on the file (e.g. a cache being filled). ``gpu_memory_below``: every GPU
of the spec uses at most ``threshold`` of its memory -- read through the
vendor's own telemetry sampler (``gpu.<i>.mem_used_mib``) against the
platform's ``memory_total_mib``, so the check is vendor-neutral. A wait that
cannot be checked here is reported as such, never as passed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from inferx_core.errors import UserFacingError
from inferx_core.launch.process import port_is_free
from inferx_core.sdk.launch_spec import LaunchSpec, PreflightWait
from inferx_core.sdk.log import get_logger
from inferx_core.sdk.platform import Platform

POLL_S = 1.0


class PreflightTimeout(UserFacingError):
    pass


def _announce(what: str, timeout_s: float) -> None:
    """A wait that may take long says what it waits for, once, as it starts."""
    get_logger("inferx.preflight").info(f"waiting up to {timeout_s:.0f} s for {what}")


def _wait_port(wait: PreflightWait, spec: LaunchSpec, sleep: Callable[[float], None]) -> dict:
    port = wait.port or spec.port
    deadline = time.monotonic() + wait.timeout_s
    if not port_is_free(port, spec.host):
        _announce(f"port {port} to be free (something listens on it)", wait.timeout_s)
    while not port_is_free(port, spec.host):
        if time.monotonic() > deadline:
            raise PreflightTimeout(
                f"port {port} is still in use after {wait.timeout_s:.0f} s; stop what holds it "
                "or leave `port:` unset so InferX picks a free one"
            )
        sleep(POLL_S)
    return {"kind": wait.kind, "port": port, "ok": True}


def gpu_memory_fractions(
    samplers: list[Any], platform: Platform, gpu_ids: tuple[int, ...]
) -> dict[int, float]:
    """Fraction of memory in use per GPU, from one reading of the given samplers."""
    totals = {a.index: a.memory_total_mib for a in platform.accelerators if a.memory_total_mib}
    fractions: dict[int, float] = {}
    for sampler in samplers:
        with contextlib.suppress(Exception):
            values = sampler.read()
            for gpu in gpu_ids:
                used = values.get(f"gpu.{gpu}.mem_used_mib")
                if used is not None and totals.get(gpu):
                    fractions[gpu] = float(used) / float(totals[gpu])
    return fractions


def _wait_gpu_memory(
    wait: PreflightWait,
    spec: LaunchSpec,
    platform: Platform,
    make_samplers: Callable[[], list[Any]],
    sleep: Callable[[float], None],
) -> dict:
    threshold = 0.10 if wait.threshold is None else wait.threshold
    started = []
    for sampler in make_samplers():
        try:
            sampler.start()
        except Exception:  # a sampler that cannot start reports nothing here
            continue
        started.append(sampler)
    try:
        deadline = time.monotonic() + wait.timeout_s
        while True:
            fractions = gpu_memory_fractions(started, platform, spec.gpu_ids)
            missing = [g for g in spec.gpu_ids if g not in fractions]
            if missing and not fractions:
                return {
                    "kind": wait.kind,
                    "ok": None,
                    "note": f"no sampler reports memory for gpu {missing}; not checked",
                }
            busy = {g: f for g, f in fractions.items() if f > threshold}
            if busy and time.monotonic() + wait.timeout_s - deadline < POLL_S:
                _announce(
                    f"GPU(s) {sorted(busy)} to drop below {threshold:.0%} memory in use",
                    wait.timeout_s,
                )
            if not busy:
                return {
                    "kind": wait.kind,
                    # a GPU without a reading was not checked: never report it as passed
                    "ok": True if not missing else None,
                    "threshold": threshold,
                    "used": {str(g): round(f, 4) for g, f in fractions.items()},
                    **({"unchecked": missing} if missing else {}),
                }
            if time.monotonic() > deadline:
                detail = ", ".join(f"gpu {g} at {f:.0%}" for g, f in sorted(busy.items()))
                raise PreflightTimeout(
                    f"GPUs still busy after {wait.timeout_s:.0f} s ({detail} of memory in use, "
                    f"limit {threshold:.0%}): a previous job may still be draining"
                    + (f"; {wait.reason}" if wait.reason else "")
                )
            sleep(POLL_S)
    finally:
        for sampler in started:
            with contextlib.suppress(Exception):
                sampler.stop()


def _wait_unlocked(wait: PreflightWait, sleep: Callable[[float], None]) -> dict:
    """Wait until nobody holds an exclusive flock on ``wait.path`` (we never keep it)."""
    import fcntl
    from pathlib import Path

    if not wait.path or not Path(wait.path).exists():
        return {"kind": wait.kind, "path": wait.path, "ok": True, "note": "no lock file"}
    deadline = time.monotonic() + wait.timeout_s
    while True:
        with open(wait.path, "a") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() + wait.timeout_s - deadline < POLL_S:
                    _announce(f"the lock on {wait.path} to be released", wait.timeout_s)
            else:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
                return {"kind": wait.kind, "path": wait.path, "ok": True}
        if time.monotonic() > deadline:
            raise PreflightTimeout(
                f"{wait.path} is still locked after {wait.timeout_s:.0f} s"
                + (f" ({wait.reason})" if wait.reason else "")
            )
        sleep(POLL_S)


def run_preflight(
    spec: LaunchSpec,
    platform: Platform,
    make_samplers: Callable[[], list[Any]],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """Every wait of ``spec``, in order; raises PreflightTimeout when one does not clear."""
    checks: list[dict[str, Any]] = []
    for wait in spec.preflight:
        if wait.kind == "port_free":
            checks.append(_wait_port(wait, spec, sleep))
        elif wait.kind == "gpu_memory_below":
            checks.append(_wait_gpu_memory(wait, spec, platform, make_samplers, sleep))
        elif wait.kind == "path_unlocked":
            checks.append(_wait_unlocked(wait, sleep))
        else:
            checks.append({"kind": wait.kind, "ok": None, "note": "no checker for this kind"})
    return checks
