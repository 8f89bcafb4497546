"""A rate search is an open loop: ``--arrival`` and the other open-loop flags beside
``--search rate`` reach its probes, as a config's ``load:`` does (verifier finding F6,
issue 38 item 6: the flags were refused as if no open loop were asked)."""

from __future__ import annotations

import pytest

from inferx_core.cli.app import build_parser
from inferx_core.cli.bench import bench_config_from_args
from inferx_core.errors import UserFacingError

BASE = ["bench", "--base-url", "http://127.0.0.1:1", "--slo", "ttft_ms=300"]


def test_open_loop_flags_beside_a_rate_search_are_kept() -> None:
    argv = [*BASE, "--search", "rate", "--arrival", "constant", "--max-concurrency", "8"]
    config = bench_config_from_args(build_parser().parse_args(argv))
    assert config.search is not None and config.search.over == "rate"
    assert config.load.arrival == "constant" and config.load.max_concurrency == 8


def test_they_are_still_refused_beside_a_concurrency_search() -> None:
    argv = [*BASE, "--search", "concurrency", "--arrival", "constant"]
    with pytest.raises(UserFacingError, match="--arrival applies to an open loop only"):
        bench_config_from_args(build_parser().parse_args(argv))
