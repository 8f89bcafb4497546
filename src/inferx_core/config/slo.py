"""One SLO vocabulary: :class:`SloTarget`, the promise every judge reads.

A target is per-request limits (``ttft_ms``, ``tpot_ms``, ``itl_ms`` = a request's
largest gap, ``e2el_ms``, ``intvty`` = the least tokens/s one user sees), met
together by a **goodput** share of the requests, and percentile limits on
reported figures (``p99_ttft_ms``, ``median_tpot_ms``...). ``search.slo`` with
``search.goodput``, ``--slo`` in ``inferx bench`` and ``inferx report``
(:func:`parse_slo_text`, one parser) and the buyer's table all build this one
type; every check of a key happens here, before any load is sent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from pydantic import Field, field_validator, model_validator

from inferx_core.config.base import StrictModel

__all__ = [
    "PER_REQUEST_LIMITS",
    "SLO_KEYS_HELP",
    "SloTarget",
    "check_slo_limits",
    "parse_slo_text",
    "percentile_limit_parts",
]

#: Per-request limits: a request is good when it meets every one given (ms, except
#: ``intvty``: the least tokens/s one user sees, 1000 / TPOT).
PER_REQUEST_LIMITS: tuple[str, ...] = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "intvty")
_PERCENTILE_LIMIT = re.compile(r"^(p\d+(?:\.\d+)?|median|mean)_(ttft|tpot|itl|e2el)_ms$")
SLO_KEYS_HELP = (
    "ttft_ms, tpot_ms, itl_ms, e2el_ms, intvty (per request), goodput (their share, "
    "default 0.99), or a percentile limit such as p99_ttft_ms, median_tpot_ms "
    "(a percentile in (0, 100))"
)


def percentile_limit_parts(key: str) -> tuple[str, str] | None:
    """``p99_ttft_ms`` -> (``p99``, ``ttft``); None for any other key."""
    match = _PERCENTILE_LIMIT.match(key)
    return (match.group(1), match.group(2)) if match else None


def _check_key(key: str) -> None:
    if key == "goodput" or key in PER_REQUEST_LIMITS:
        return
    parts = percentile_limit_parts(key)
    if parts is None:
        raise ValueError(f"unknown SLO {key!r}; expected {SLO_KEYS_HELP}")
    if parts[0].startswith("p") and not 0 < float(parts[0][1:]) < 100:
        # p0 is the minimum, p100 the maximum: no tail a limit could promise; p101 is none
        raise ValueError(
            f"SLO {key}: the percentile must be in (0, 100), got {parts[0][1:]} "
            f"(e.g. p99_{parts[1]}_ms; max is not a percentile)"
        )


def check_slo_limits(value: Mapping[str, float]) -> dict[str, float]:
    """Every key known and every limit a finite number > 0 (goodput at most 1)."""
    if not value:
        raise ValueError(f"give at least one limit: {SLO_KEYS_HELP}")
    for key, limit in value.items():
        _check_key(key)
        if isinstance(limit, bool) or not (limit > 0 and math.isfinite(limit)):
            raise ValueError(f"SLO {key}: a finite number > 0, got {limit!r}")
    if "goodput" in value and not value["goodput"] <= 1:
        raise ValueError("SLO goodput is a share of requests: at most 1 (e.g. 0.99)")
    return dict(value)


def parse_slo_text(text: str, flag: str = "--slo") -> dict[str, float]:
    """``ttft_ms=500,tpot_ms=30`` as limits by name; a key given twice is refused (the
    one parser of ``--slo`` in ``inferx bench`` and ``inferx report``)."""
    pairs: list[tuple[str, float]] = []
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{flag} wants key=value pairs, got {item!r}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{flag} {key.strip()}: a number, got {value.strip()!r}") from None
        pairs.append((key.strip(), number))
    return slo_from_pairs(pairs, flag)


def slo_from_pairs(pairs: Iterable[tuple[str, float]], flag: str = "--slo") -> dict[str, float]:
    out: dict[str, float] = {}
    for key, number in pairs:
        if key in out:
            raise ValueError(
                f"{flag} {key} is given twice ({out[key]:g} and {number:g}); give it once"
            )
        out[key] = number
    try:
        return check_slo_limits(out)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


class SloTarget(StrictModel):
    """Per-request limits met together by a ``goodput`` share, and percentile limits."""

    limits: dict[str, float] = Field(description=f"The limits, by name: {SLO_KEYS_HELP}")
    goodput: float = Field(
        default=0.99, gt=0, le=1, description="Share of requests meeting every per-request limit"
    )

    @field_validator("limits")
    @classmethod
    def _known(cls, value: dict[str, float]) -> dict[str, float]:
        return check_slo_limits(value)

    @model_validator(mode="after")
    def _share(self) -> SloTarget:
        if "goodput" in self.limits:  # `--slo goodput=0.95` sets the share
            self.goodput = self.limits.pop("goodput")
            if not self.limits:
                raise ValueError(f"goodput needs per-request limits: {SLO_KEYS_HELP}")
        return self

    def per_request(self) -> dict[str, float]:
        """The per-request limits, as given."""
        return {k: v for k, v in self.limits.items() if k in PER_REQUEST_LIMITS}

    def percentile_limits(self) -> dict[str, float]:
        """Limits on reported figures (``p99_ttft_ms``: ...)."""
        return {k: v for k, v in self.limits.items() if percentile_limit_parts(k)}

    def percentiles_read(self) -> list[float]:
        """The percentiles its percentile limits read (``p99_ttft_ms``: 99)."""
        out: list[float] = []
        for key in self.percentile_limits():
            name = (percentile_limit_parts(key) or ("", ""))[0]
            if name.startswith("p") and float(name[1:]) not in out:
                out.append(float(name[1:]))
        return out

    def goodput_slos(self) -> dict[str, float]:
        """The per-request limits as a result's goodput SLOs (ms; ``intvty`` as TPOT)."""
        out = {k: v for k, v in self.per_request().items() if k != "intvty"}
        if "intvty" in self.limits:
            tpot = 1000.0 / self.limits["intvty"]
            out["tpot_ms"] = min(out.get("tpot_ms", tpot), tpot)
        return out

    def latency_limit_s(self) -> float | None:
        """The largest limit a queue adds to (TTFT, E2E latency), in seconds; None: none."""
        ms = [v for k, v in self.limits.items() if k.endswith(("ttft_ms", "e2el_ms"))]
        return max(ms) / 1000.0 if ms else None

    def describe(self) -> str:
        """One line: ``0.99 of requests: ttft_ms<=500; p99_tpot_ms<=50``."""
        parts = []
        if self.per_request():
            limits = ", ".join(
                f"{k}>={v:g}" if k == "intvty" else f"{k}<={v:g}"
                for k, v in self.per_request().items()
            )
            parts.append(f"{self.goodput:.4g} of requests: {limits}")
        parts += [f"{k}<={v:g}" for k, v in self.percentile_limits().items()]
        return "; ".join(parts)

    def key(self) -> tuple[tuple[tuple[str, float], ...], float]:
        """Equal targets have equal keys (the buyer's table's distinct SLOs)."""
        return tuple(sorted(self.limits.items())), self.goodput
