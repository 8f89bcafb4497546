"""Every check ``inferx audit`` runs is a row of docs/metrics.md section 11, with the
limit the code holds it to: the checks run on every committed tool file are collected
from the verdicts themselves, and each limit is read from its constant."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from inferx_core.cli.app import main
from inferx_core.config.validity import ValidityLimits
from inferx_core.interop.judged import VERDICT_CHECKS
from inferx_core.interop.tool_checks import (
    MAX_OUTPUT_RATIO,
    MAX_TOKEN_COUNT_DRIFT,
    MIN_ITL_TO_TPOT,
    MIN_OUTPUT_RATIO,
    MIN_REACHED_FRACTION,
    MIN_SENDS_FOR_RATE,
)
from inferx_core.interop.vllm_detailed import MAX_EARLY_TTFT_SHARE

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
#: Families of checks, one row each (the part after the dot varies).
FAMILIES = {
    "sample_size.": "sample_size.p<P>_<metric>_ms",
    "guidellm_warning.": "guidellm_warning.<code>",
}


def _rows() -> dict[str, list[str]]:
    """Section 11's table rows by check name -> their cells (a name may have two rows:
    InferX's own form and a summary-only form)."""
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    section = text.split("## 11.", 1)[1].split("\n## 12.", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        if match := re.match(r"^\| `([^`]+)`(.*)$", line):
            rows.setdefault(match[1], []).append(line)
    return rows


def _documented(name: str) -> str:
    for prefix, row in FAMILIES.items():
        if name.startswith(prefix):
            return row
    return name


def test_every_check_the_audit_ran_on_the_committed_files_is_documented(capsys) -> None:
    main(["audit", "--json", str(FIXTURES)])
    audits = json.loads(capsys.readouterr().out)["audits"]
    ran = {c["name"] for a in audits for c in (a["validity"] or {}).get("checks", [])}
    assert {"client_dispatch_delay", "records_complete", "tool_token_count"} <= ran
    rows = _rows()
    missing = sorted(n for n in ran if _documented(n) not in rows)
    assert not missing, f"run by the audit, no row in docs/metrics.md section 11: {missing}"


def test_every_check_an_import_can_get_is_documented() -> None:
    rows = _rows()
    missing = sorted(set(VERDICT_CHECKS) - set(rows))
    assert not missing, f"no row in docs/metrics.md section 11: {missing}"


def _limit_cells(name: str) -> str:
    return " ".join(line.split("|")[3] for line in _rows()[name])


LIMITS = {
    "concurrency_reached": [f"{MIN_REACHED_FRACTION:g}"],
    "output_length": [f"{MIN_OUTPUT_RATIO:g} to {MAX_OUTPUT_RATIO:g}"],
    "rate_reached": ["1 - 4/sqrt(n)"],
    "tool_token_count": [f"{MAX_TOKEN_COUNT_DRIFT:g}"],
    "client_dispatch_delay": [f"{ValidityLimits().max_dispatch_lateness_p99_ms:g} ms"],
    "first_chunk_without_token": [f"{MAX_EARLY_TTFT_SHARE:g}"],
    "achieved_rate": [f"{ValidityLimits().min_rate_ratio:g}"],
    "chunk_coalescing": [f"{MIN_ITL_TO_TPOT:g}", f"{ValidityLimits().max_zero_gap_fraction:g}"],
}


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_each_documented_limit_is_the_one_the_code_holds(name: str) -> None:
    cells = _limit_cells(name)
    for limit in LIMITS[name]:
        assert limit in cells, f"docs/metrics.md: {name}'s limit should say {limit!r}: {cells}"


def test_the_rate_check_names_its_minimum_requests() -> None:
    (row,) = _rows()["rate_reached"]
    assert f"{MIN_SENDS_FOR_RATE} or more requests" in row
