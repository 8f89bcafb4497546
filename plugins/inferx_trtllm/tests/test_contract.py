"""inferx-trtllm against the plugin contract, with the kit third-party plugins use."""

from __future__ import annotations

from pathlib import Path

from inferx_core.sdk.platform import load_platform
from inferx_core.testing.plugin_kit import check_plugin

PLATFORMS = Path(__file__).resolve().parents[3] / "tests" / "platforms"


def test_inferx_trtllm_meets_the_plugin_contract() -> None:
    platforms = [load_platform(PLATFORMS / f) for f in ("cpu.json", "h200x8.json", "mi355x8.json")]
    checked = check_plugin("inferx-trtllm", platforms)
    assert checked["entry_points"] == ["trtllm"]
