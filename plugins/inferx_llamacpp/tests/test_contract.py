"""inferx-llamacpp against the plugin contract, with the kit third-party plugins use."""

from __future__ import annotations

from pathlib import Path

from inferx_core import Platform
from inferx_core.testing.plugin_kit import check_plugin

PLATFORMS = Path(__file__).resolve().parents[3] / "tests" / "platforms"


def test_inferx_llamacpp_meets_the_plugin_contract() -> None:
    platforms = [
        Platform.model_validate_json((PLATFORMS / f).read_text())
        for f in ("cpu.json", "h200x8.json")
    ]
    checked = check_plugin("inferx-llamacpp", platforms)
    assert checked["entry_points"] == ["llamacpp"]
    assert checked["engines"] == ["llamacpp"]
