"""Checks of user input that pydantic's field types cannot express: URLs, percentiles, lengths.

Each raises ``ValueError`` with the fix; inside a model validator pydantic
turns that into a ConfigError line naming the field (``base_url: ...``).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

# [user@]host[:port], host a name, an IPv4 address or a bracketed IPv6 address
_NETLOC = re.compile(r"([^@/]*@)?(\[[0-9A-Fa-f:.]+\]|[^:@\[\]/%]+)(:\d+)?")


def check_base_url(url: str) -> str:
    """``url`` without surrounding whitespace, or a ValueError saying what is wrong in it."""
    text = url.strip()
    example = "e.g. http://127.0.0.1:8000"
    if any(c.isspace() for c in text):
        raise ValueError(f"{url!r} contains whitespace; {example}")
    try:
        parts = urlsplit(text)
        port = parts.port  # raises on a port that is not a number or out of 0-65535
        host = parts.hostname
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a URL ({exc}); {example}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{url!r} must start with http:// or https://; {example}")
    if not host:
        raise ValueError(f"{url!r} has no host; {example}")
    if port == 0:
        raise ValueError(f"{url!r}: port 0 cannot be connected to; use 1-65535")
    if not _NETLOC.fullmatch(parts.netloc):
        raise ValueError(f"{url!r}: {parts.netloc!r} is not host[:port]; {example}")
    if "[" in parts.netloc:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{url!r}: {host!r} is not an IPv6 address; {example}") from None
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r}: no query or fragment; give the server's root, {example}")
    return text


def check_percentiles(values: Iterable[float]) -> list[float]:
    """Every percentile in [0, 100] (p0 is the minimum, p100 the maximum)."""
    out = list(values)
    bad = [p for p in out if not math.isfinite(p) or not 0 <= p <= 100]
    if bad:
        raise ValueError(f"percentiles must lie in [0, 100], got {bad}; e.g. 50,90,99,99.9")
    if not out:
        raise ValueError("give at least one percentile, e.g. 50,90,99")
    return out


def max_request_tokens(workload: object) -> tuple[int, int] | None:
    """The largest (input, output) lengths a random/lognormal workload can draw; None for a
    dataset (its lengths are only known once read)."""
    w: Any = workload  # a Workload, read by name (config.models imports this module)
    kind = getattr(workload, "kind", "random")
    if kind == "lognormal":
        mix = w.lognormal
        return mix.input_max, mix.output_max
    if kind == "multi-turn":  # the last turn carries every message and reply before it
        turn_isl, turn_osl = w.turn_isl or w.isl, w.turn_osl or w.osl
        return w.turns * turn_isl + (w.turns - 1) * turn_osl, turn_osl
    if kind != "random":
        return None
    isl, osl = w.isl, w.osl
    if w.range_semantics == "vllm":
        r = w.range_ratio
        return int(isl * (1 + r)), int(osl * (1 + r))
    return isl, osl


def check_fits_context(workload: object, max_model_len: int | None, where: str) -> None:
    """A request longest input + output must fit the model's context (when it is known)."""
    if max_model_len is None:
        return
    longest = max_request_tokens(workload)
    if longest is None:
        return
    isl, osl = longest
    if isl + osl > max_model_len:
        raise ValueError(
            f"the longest request is {isl} input + {osl} output = {isl + osl} tokens, above "
            f"max_model_len {max_model_len} ({where}); lower workload.isl/osl, or raise "
            "max_model_len if the model supports it"
        )
