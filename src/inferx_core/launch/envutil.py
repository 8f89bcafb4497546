"""Building an engine's environment from the inherited one and a LaunchSpec."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from inferx_core.sdk.launch_spec import LaunchSpec


def unset_matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def engine_environment(spec: LaunchSpec, inherited: Mapping[str, str]) -> dict[str, str]:
    """Inherited env minus ``spec.unset_env`` patterns, plus ``spec.env``."""
    env = {k: v for k, v in inherited.items() if not unset_matches(k, spec.unset_env)}
    env.update(spec.env)
    return env
