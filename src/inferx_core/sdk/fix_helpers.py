"""Helpers the fix catalogues share (the built-in NVIDIA one and plugins' such as inferx-rocm)."""

from __future__ import annotations

from typing import Any

from inferx_core.errors import UserFacingError
from inferx_core.sdk.fixes import FixContext


def checked_plugin_options(
    ctx: FixContext, key: str, options: dict[str, type], example: str
) -> dict[str, Any]:
    """``plugin_options.<key>``, checked: unknown keys and wrong types are the user's to fix.

    ``options`` maps each known key to its type; ``example`` is one option as
    YAML (``aiter: false``), shown when the value is not a mapping.
    """
    raw = ctx.server.plugin_options.get(key, {})
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UserFacingError(
            f"plugin_options.{key} must be a mapping, e.g. {{{key}: {{{example}}}}}; got {raw!r}"
        )
    for name, value in raw.items():
        if name not in options:
            raise UserFacingError(
                f"plugin_options.{key}.{name}: unknown option; known: " + ", ".join(sorted(options))
            )
        if not isinstance(value, options[name]):
            raise UserFacingError(
                f"plugin_options.{key}.{name} must be {options[name].__name__}, got {value!r}"
            )
    return raw
