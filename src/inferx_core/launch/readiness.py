"""Waiting until an engine is really ready: probes in order, bounded, aborting on death.

Each probe is retried (tenacity, exponential back-off up to a few seconds)
until it passes or the overall timeout ends; before every attempt the engine
process is checked, so a crash ends the wait at once with the log tail.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential,
)

from inferx_core.errors import UserFacingError
from inferx_core.sdk.probes import ReadinessProbe

DEFAULT_PROBES = (
    ReadinessProbe(name="health", path="/health"),
    ReadinessProbe(name="model listed", path="/v1/models", expect_in_body="{served_model_name}"),
)


class Watched(Protocol):
    """What the wait reads of a starting server: its URL and whether it still runs.

    A launch handle has it; so has one process of a deployment, which may not stop
    the others (a ServerHandle's ``stop`` is not needed to wait)."""

    base_url: str

    def alive(self) -> bool: ...

    def returncode(self) -> int | None: ...

    def log_tail(self, lines: int = 40) -> str: ...


class ProbeFailed(Exception):
    """One attempt did not pass (retried)."""


class EngineExited(UserFacingError):
    """The engine process ended while we waited or measured."""

    def __init__(self, returncode: int | None, log_tail: str) -> None:
        self.returncode = returncode
        self.log_tail = log_tail
        self.reason = f"engine exited with code {returncode} before it was ready"
        super().__init__(f"{self.reason}; last log lines:\n{log_tail}")


class ReadinessTimeout(UserFacingError):
    def __init__(self, probe: str, timeout_s: float, last_error: str, log_tail: str) -> None:
        self.log_tail = log_tail
        self.reason = (
            f"engine not ready after {timeout_s:.0f} s: probe {probe!r} kept failing "
            f"({last_error}); raise readiness_timeout_s if the engine is just slow"
        )
        super().__init__(f"{self.reason}. Last log lines:\n{log_tail}")


class ReadinessAuthError(UserFacingError):
    """The server answered 401/403: no waiting can fix that, only a key."""

    def __init__(self, probe: str, status: int, log_tail: str) -> None:
        self.log_tail = log_tail
        self.reason = (
            f"probe {probe!r} got HTTP {status}: the server needs an API key: set api_key "
            "/ INFERX_API_KEY (InferX sends it as Authorization: Bearer)"
        )
        super().__init__(self.reason)


@dataclass
class ReadinessReport:
    seconds: float
    probes: list[dict[str, Any]] = field(default_factory=list)


def fill(template: Any, values: dict[str, str]) -> Any:
    """Substitute ``{served_model_name}``/``{model}`` in strings of a probe body."""
    if isinstance(template, str):
        for key, value in values.items():
            template = template.replace("{" + key + "}", value)
        return template
    if isinstance(template, dict):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    return template


def check_probe(client: Any, base_url: str, probe: ReadinessProbe, values: dict[str, str]) -> None:
    """One attempt; raises ProbeFailed with the reason."""
    import httpx

    url = base_url.rstrip("/") + fill(probe.path, values)
    try:
        reply = client.request(
            probe.method, url, json=fill(probe.json_body, values), timeout=probe.timeout_s
        )
    except httpx.HTTPError as exc:
        raise ProbeFailed(f"{type(exc).__name__}: {exc}") from exc
    if reply.status_code in (401, 403) and probe.expect_status not in (401, 403):
        raise ReadinessAuthError(probe.name, reply.status_code, "")
    if reply.status_code != probe.expect_status:
        raise ProbeFailed(f"HTTP {reply.status_code}: {' '.join(reply.text[:200].split())}")
    expected = fill(probe.expect_in_body, values) if probe.expect_in_body else None
    if expected and expected not in reply.text:
        raise ProbeFailed(f"reply does not contain {expected!r}")


def wait_until_ready(
    handle: Watched,
    probes: Sequence[ReadinessProbe],
    *,
    served_model_name: str,
    model: str,
    timeout_s: float,
    sleep: Callable[[float], None] = time.sleep,
    headers: dict[str, str] | None = None,
) -> ReadinessReport:
    """Every probe in order, retried until ``timeout_s``; a 401/403 ends the wait at once."""
    import httpx

    values = {"served_model_name": served_model_name, "model": model}
    started = time.monotonic()
    report = ReadinessReport(seconds=0.0)
    with httpx.Client(headers=headers) as client:
        for probe in probes:
            remaining = timeout_s - (time.monotonic() - started)
            last_error = "no attempt"

            def attempt(probe: ReadinessProbe = probe) -> None:
                nonlocal last_error
                if not handle.alive():
                    raise EngineExited(handle.returncode(), handle.log_tail())
                try:
                    check_probe(client, handle.base_url, probe, values)
                except ProbeFailed as exc:
                    last_error = str(exc)
                    raise

            retrying = Retrying(
                stop=stop_after_delay(max(remaining, 0.0)),
                wait=wait_exponential(multiplier=0.25, min=0.25, max=5.0),
                retry=retry_if_exception_type(ProbeFailed),
                sleep=sleep,
                reraise=False,
            )
            probe_started = time.monotonic()
            try:
                retrying(attempt)
            except RetryError:
                raise ReadinessTimeout(
                    probe.name, timeout_s, last_error, handle.log_tail()
                ) from None
            report.probes.append(
                {
                    "name": probe.name,
                    "path": probe.path,
                    "seconds": round(time.monotonic() - probe_started, 3),
                }
            )
    report.seconds = round(time.monotonic() - started, 3)
    return report


def engine_version(
    base_url: str, path: str | None, field_name: str, headers: dict[str, str] | None = None
) -> str | None:
    """The engine's version as the server reports it, or None (never guessed)."""
    if not path:
        return None
    import httpx

    try:
        reply = httpx.get(base_url.rstrip("/") + path, timeout=10.0, headers=headers)
        reply.raise_for_status()
        value = reply.json().get(field_name)
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return str(value) if value is not None else None
