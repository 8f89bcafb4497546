"""One SLO vocabulary: :class:`SloTarget`, the promise every judge reads.

A target is per-request limits (``ttft_ms``, ``tpot_ms``, ``itl_ms`` = a request's
largest gap, ``e2el_ms``, ``intvty`` = the least tokens/s one user sees), met
together by a **goodput** share of the requests, and percentile limits on
reported figures (``p99_ttft_ms``, ``median_tpot_ms``...). A config's ``slo:``
(:data:`PointSlo`: what a point's goodput counts), ``search.slo``, ``--slo`` in
``inferx bench`` and ``inferx report`` (:func:`parse_slo_text`, one parser) and the
buyer's table all build this one type, written as it is read: the limits by name
beside ``goodput`` (``{ttft_ms: 500, p99_e2el_ms: 9000, goodput: 0.95}``, as
``--slo ttft_ms=500,p99_e2el_ms=9000,goodput=0.95``). Every check of a key happens
here, before any load is sent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_serializer, model_validator

from inferx_core.config.base import StrictModel

__all__ = [
    "PER_REQUEST_LIMITS",
    "SLO_KEYS_HELP",
    "PointSlo",
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
    """Per-request limits met together by a ``goodput`` share, and percentile limits.

    Read and written flat, as a config and ``--slo`` spell it (``{ttft_ms: 500,
    goodput: 0.95}``); ``SloTarget(limits={...}, goodput=...)`` in code."""

    limits: dict[str, float] = Field(description=f"The limits, by name: {SLO_KEYS_HELP}")
    goodput: float = Field(
        default=0.99, gt=0, le=1, description="Share of requests meeting every per-request limit"
    )

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, data: Any) -> Any:
        # the limits by name beside goodput: `goodput` is popped below, with its check
        if isinstance(data, Mapping) and "limits" not in data:
            return {"limits": dict(data)}
        return data

    @model_validator(mode="after")
    def _checked(self) -> SloTarget:
        # here, not on the field: an error names the target (`slo:`), not `limits`,
        # which a config never spells
        check_slo_limits(self.limits)
        if "goodput" in self.limits:  # `--slo goodput=0.95` sets the share
            self.goodput = self.limits.pop("goodput")
            self.model_fields_set.add("goodput")
            if not self.limits:
                raise ValueError(f"goodput needs per-request limits: {SLO_KEYS_HELP}")
        return self

    @model_serializer(mode="plain")
    def _as_written(self) -> dict[str, float]:
        # written as read, so a dumped config validates again to the same target; the
        # share only where it was given (a config's slo: takes none)
        given = "goodput" in self.model_fields_set
        return {**self.limits, **({"goodput": self.goodput} if given else {})}

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


def _none_when_empty(value: Any) -> Any:
    """``slo: {}`` or a limit set to null is no limit, as the section always read."""
    if isinstance(value, Mapping) and "limits" not in value:
        value = {k: v for k, v in value.items() if v is not None}
        return value or None
    return value


def _per_request_only(target: SloTarget | None) -> SloTarget | None:
    """A point's goodput counts the requests meeting every per-request limit; a
    percentile limit or a goodput share judges a load level, which one point is not."""
    if target is None:
        return None
    share = ["goodput"] if "goodput" in target.model_fields_set else []
    judged = [*target.percentile_limits(), *share]
    if judged:
        raise ValueError(
            f"{', '.join(judged)} judges a load level, not one point's goodput: give it in "
            "search.slo (with --search) or to `inferx report --slo`; slo: takes the "
            "per-request limits ttft_ms, tpot_ms, itl_ms, e2el_ms, intvty"
        )
    return target


#: A bench or run config's ``slo:``: the per-request limits a point's goodput counts
#: (``intvty`` as TPOT); None: no goodput reported.
PointSlo = Annotated[
    SloTarget | None, BeforeValidator(_none_when_empty), AfterValidator(_per_request_only)
]
