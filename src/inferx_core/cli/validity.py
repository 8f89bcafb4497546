"""``--require-valid`` on ``bench`` and ``run``: invalid points fail the command only when asked."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any


def add_validity_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--require-valid",
        action="store_true",
        help="exit 1 when a point is invalid (a validity check failed: client starved, "
        "chunks coalesced, errors above 5%%, ...; inferx docs metrics)",
    )


def failed_points(outcomes: Iterable[Any], args: argparse.Namespace) -> list[str]:
    """Points that make the command fail: failed or interrupted ones, and invalid ones
    under ``--require-valid`` (an invalid point's numbers are kept and shown as invalid)."""
    allowed = {"ok"} if getattr(args, "require_valid", False) else {"ok", "invalid"}
    return [o.point_id for o in outcomes if o.status not in allowed]
