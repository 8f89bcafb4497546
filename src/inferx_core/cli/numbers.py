"""Typed argparse values for every numeric flag: a number in range, or one line saying why.

``nan`` is never a number here, ``inf`` only where the flag says what it means
(``--request-rate inf``), and a count past the limits of
:mod:`inferx_core.config.bounds` (``--num-prompts 1e13``) is refused while the
command line is parsed, before anything is allocated. Integers may be written
in exponent form when they are whole (``--num-prompts 1e4``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Bounds", "number", "numbers"]

Number = int | float


@dataclass(frozen=True)
class Bounds:
    """What a flag accepts: ``low`` (exclusive when ``low_open``) to ``high``, and inf."""

    low: Number | None = None
    high: Number | None = None
    low_open: bool = False
    allow_inf: bool = False
    unit: str = ""  # e.g. "prompts", shown with the limit
    inf_means: str = ""  # what inf does, shown when a flag accepts it
    # parse only: the config checks the value (its own message, e.g. --percentiles')
    config_checks: bool = False

    def describe(self) -> str:
        low = "" if self.low is None else f"{'>' if self.low_open else '>='} {_show(self.low)}"
        high = "" if self.high is None else f"<= {_show(self.high)}"
        text = " and ".join(p for p in (low, high) if p) or "a number"
        if self.unit:
            text += f" {self.unit}"
        return text + (f" (or inf: {self.inf_means})" if self.allow_inf else "")


def _show(value: Number) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _parse(text: str, kind: type) -> Number:
    """``text`` as a ``kind``; an integer written 1e4 is one, 1.5 is not."""
    word = text.strip()
    try:
        return int(word) if kind is int else float(word)
    except ValueError:
        pass
    try:
        value = float(word)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {_a(kind)}") from None
    if kind is int and math.isfinite(value):
        if not value.is_integer():
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        return int(value)
    return value


def _a(kind: type) -> str:
    return "an integer" if kind is int else "a number"


def _check(text: str, value: Number, kind: type, bounds: Bounds) -> Number:
    if bounds.config_checks:
        return value
    want = bounds.describe()
    if isinstance(value, float) and math.isnan(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give {want}")
    if isinstance(value, float) and math.isinf(value):
        if value > 0 and bounds.allow_inf:
            return value
        what = "too large" if kind is int and value > 0 else "not finite"
        raise argparse.ArgumentTypeError(f"{text!r} is {what}; give {want}")
    if bounds.low is not None and (value < bounds.low or (bounds.low_open and value == bounds.low)):
        raise argparse.ArgumentTypeError(f"{text} is too small; give {want}")
    if bounds.high is not None and value > bounds.high:
        raise argparse.ArgumentTypeError(f"{text} is over the limit; give {want}")
    return value


def number(kind: type, bounds: Bounds | None = None) -> Callable[[str], Number]:
    """An argparse ``type=`` for one ``kind`` (int or float) within ``bounds``."""
    limits = bounds or Bounds()

    def parse(text: str) -> Number:
        return _check(text, _parse(text, kind), kind, limits)

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def numbers(kind: type, bounds: Bounds | None = None) -> Callable[[str], list[Number]]:
    """An argparse ``type=`` for comma-separated ``kind`` values, each within ``bounds``."""
    one = number(kind, bounds)

    def parse(text: str) -> list[Number]:
        items = [item for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__}s")
        return [one(item) for item in items]

    parse.__name__ = f"{kind.__name__} list"
    return parse
