"""Client resources: enough file descriptors for the concurrency asked for.

Each request in flight holds one socket. Linux starts processes with a soft
``RLIMIT_NOFILE`` (often 1024, or 512) far below the hard limit, so InferX
raises the soft limit toward the hard one before a point, and refuses up
front, with the fix, a concurrency that cannot fit even then: running out
mid-point would fail requests that are the client's fault, not the server's.
"""

from __future__ import annotations

try:
    import resource
except ImportError:  # not POSIX
    resource = None  # type: ignore[assignment]  # not POSIX: no resource module

from inferx_core.errors import UserFacingError

#: Descriptors the process needs besides one socket per request (logs, files, samplers).
RESERVED_FDS = 64


def raise_open_files_limit() -> tuple[int, int] | None:
    """Raise the soft open-files limit to the hard one; (soft, hard) after, None off POSIX."""
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft, hard


def ensure_concurrency_fits(concurrency: int | None) -> None:
    """Raise the limit; a concurrency that still cannot fit is a user error naming the fix."""
    limits = raise_open_files_limit()
    if limits is None or not concurrency:
        return
    soft, hard = limits
    if concurrency + RESERVED_FDS > soft:
        raise UserFacingError(
            f"concurrency {concurrency} needs about {concurrency + RESERVED_FDS} open files, but "
            f"this process may open {soft} (hard limit {hard}): raise it (`ulimit -n "
            f"{concurrency + RESERVED_FDS}`, or LimitNOFILE= for a service), or lower it"
        )
