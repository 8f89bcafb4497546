"""The report tests' headless Chromium (found, installed once as root with apt, or skipped
visibly; a failure under ``INFERX_REQUIRE_BROWSER=1``), shared with the dashboard tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_inferx_report_browser", Path(__file__).parents[1] / "report" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_browser)

chromium = _browser.chromium  # the session fixture itself
