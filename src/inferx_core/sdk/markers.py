"""The pluggy project name and the two markers every plugin uses."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "inferx"

#: Marker for plugin hook implementations: ``@inferx_core.hookimpl``.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
#: Marker for hook specifications (used by ``inferx_core.sdk.hookspecs``).
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
