"""The base of every configuration model: unknown keys are errors, defaults are validated."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from inferx_core.config.secrets import remember_secrets, url_credentials_in


class StrictModel(BaseModel):
    """A config section: a misspelt key is an error, never silently ignored, and a number
    is finite (``.nan`` or ``.inf`` are refused unless a field says what inf means)."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)

    @model_validator(mode="after")
    def _remember_url_credentials(self) -> StrictModel:
        # Credentials in any URL of any section (base_url, a dataset or tokenizer URL, a
        # proxy in an env map) are secrets: every writer masks them (nested sections do
        # their own fields).
        remember_secrets(url_credentials_in(self.__dict__.values()))
        return self
