"""An engine's own verdict on a launch's argv: what ``inferx plan --check-args`` prints."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ArgvVerdict(BaseModel):
    """What the engine's own argument parser said of one launch's argv.

    ``accepted`` is True when the engine takes the argv as it is, False when it
    refuses it (or calls a flag deprecated, or only took a prefix of a flag),
    and None when the check could not run here (the engine is not installed
    where its command would run): ``message`` then says why and how to make
    the check possible. ``message`` carries the engine's own words on refusal.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: str
    accepted: bool | None
    message: str = Field(description="the engine's own message, or why no check ran")
    engine_version: str | None = None
    checked_with: str | None = Field(
        default=None, description="what parsed the argv (interpreter, binary, function)"
    )
