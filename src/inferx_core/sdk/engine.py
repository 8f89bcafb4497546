"""Engine descriptors: what a plugin registers so the core can name and offer an engine."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EngineInfo(BaseModel):
    """An engine a plugin can launch (registered with ``inferx_register_engines``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$", description="Config value of `engine:`")
    description: str
    homepage: str | None = None
    default_port: int = 8000
    apis: tuple[str, ...] = ("completions", "chat")
    vendors: tuple[str, ...] = Field(
        default=(), description="Accelerator vendors it runs on; empty means any"
    )
    continuous_usage_stats: bool = Field(
        default=False,
        description="The server honours stream_options.continuous_usage_stats (usage on every "
        "chunk): InferX then asks for it and knows each chunk's tokens (per-token ITL)",
    )
    version_path: str | None = Field(
        default="/version", description="GET path whose JSON reports the engine version"
    )
    version_field: str = "version"
