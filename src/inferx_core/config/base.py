"""The base of every configuration model: unknown keys are errors, defaults are validated."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A config section: a misspelt key is an error, never silently ignored, and a number
    is finite (``.nan`` or ``.inf`` are refused unless a field says what inf means)."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)
