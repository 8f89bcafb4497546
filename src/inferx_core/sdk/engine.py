"""Engine descriptors: what a plugin registers so the core can name and offer an engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: (server, role) -> {name: wanted port, or (wanted first port, how many in a row)}
RolePorts = Callable[[Any, Any], Mapping[str, "int | tuple[int, int]"]]


class EngineInfo(BaseModel):
    """An engine a plugin can launch (registered with ``inferx_engines``)."""

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
    role_ports: RolePorts | None = Field(
        default=None,
        exclude=True,
        description="The ports a process of a deployment listens on beside --port, by name, "
        "each with the port it would like (the plugin's option or the engine's default): "
        "called with (ServerConfig, RoleContext) for each engine process; the core books each "
        "on the process's host like --port (the next free one up) and passes the booked ones "
        "to inferx_engine_role_spec as role.ports, and to the router as role.peer_ports",
    )
