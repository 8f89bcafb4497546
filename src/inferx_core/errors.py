"""Which exceptions are the user's to fix (printed plainly) and which are bugs (traceback).

A leaf: this module imports nothing from inferx_core. Every error a user can
act on (a bad config, a broken plugin, an unknown engine, ...) subclasses
:class:`UserFacingError` where it is defined, so the CLI needs no list of them.
"""

from __future__ import annotations


class UserFacingError(RuntimeError):
    """An error whose message tells the user what to change; printed without a traceback."""


def user_error_message(exc: BaseException) -> str | None:
    """The message to print for a user error; None for a bug (the caller re-raises)."""
    if isinstance(exc, (UserFacingError, FileNotFoundError)):
        return str(exc)
    return None
