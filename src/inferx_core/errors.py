"""Which exceptions are the user's to fix (printed plainly) and which are bugs (traceback)."""

from __future__ import annotations


def user_error_message(exc: BaseException) -> str | None:
    from inferx_core.config.loader import ConfigError
    from inferx_core.sdk.fixes import DuplicateFixError
    from inferx_core.sdk.manager import PluginError, PluginHookError
    from inferx_core.sdk.registries import EngineConflictError, EngineNotFoundError

    known: tuple[type[BaseException], ...] = (
        ConfigError,
        PluginError,
        PluginHookError,
        EngineConflictError,
        EngineNotFoundError,
        FileNotFoundError,
        DuplicateFixError,
    )
    if isinstance(exc, known):
        return str(exc)
    if isinstance(exc, UserFacingError):
        return str(exc)
    return None


class UserFacingError(RuntimeError):
    """An error whose message tells the user what to change; printed without a traceback."""
