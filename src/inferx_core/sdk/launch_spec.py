"""LaunchSpec: how to start one engine server, as pure data.

An engine plugin builds it, fixes transform it (``LaunchSpec -> LaunchSpec``),
a launcher executes it. ``argv`` is a list, never a shell string.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Mount(_Data):
    """A host path made visible to the engine (container bind mount or shared dir)."""

    host_path: str
    container_path: str
    read_only: bool = False


class PreflightWait(_Data):
    """A condition the launcher waits for (bounded) before starting the engine.

    ``kind`` is interpreted by the core: ``port_free`` (``port``),
    ``gpu_memory_below`` (``threshold`` is the fraction of VRAM in use every
    GPU of ``gpu_ids`` must be at or below), ``path_unlocked`` (``path``).
    """

    kind: Literal["port_free", "gpu_memory_below", "path_unlocked"]
    timeout_s: float = Field(default=300.0, gt=0)
    port: int | None = None
    threshold: float | None = Field(default=None, ge=0, le=1)
    path: str | None = None
    reason: str = ""


class LaunchSpec(_Data):
    """Everything a launcher needs to start one engine server.

    ``env`` holds only the variables InferX adds or changes; launchers layer
    it over the inherited environment minus ``unset_env`` (patterns with a
    trailing ``*`` remove a prefix, e.g. ``SLURM_*``).
    """

    engine: str
    argv: tuple[str, ...] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    unset_env: tuple[str, ...] = ()
    image: str | None = Field(default=None, description="Container image; None runs argv directly")
    host: str = "127.0.0.1"
    port: int = Field(ge=1, le=65535)
    mounts: tuple[Mount, ...] = ()
    ulimits: dict[str, int] = Field(default_factory=dict, description="e.g. {'core': 0}")
    workdir: str | None = None
    gpu_ids: tuple[int, ...] = ()
    cpus: tuple[int, ...] = Field(
        default=(), description="CPU affinity of the engine (set by the core); empty: any"
    )
    devices: tuple[str, ...] = Field(default=(), description="Device nodes, e.g. /dev/kfd")
    shm_size: str | None = None
    ipc_host: bool = False
    docker_args: tuple[str, ...] = Field(
        default=(),
        description="Extra `docker run` options a vendor needs, e.g. ('--group-add', 'video')",
    )
    preflight: tuple[PreflightWait, ...] = ()
    files: dict[str, str] = Field(
        default_factory=dict,
        description="Files to write into the run folder before launch: name -> content; "
        "name them in argv or env values as `{run_dir}/<name>` (launchers replace `{run_dir}`)",
    )
    warnings: tuple[str, ...] = ()
    labels: dict[str, str] = Field(default_factory=dict)
    headless: bool = Field(
        default=False,
        exclude=True,
        description="A deployment's process that serves no HTTP (vLLM's nodes above rank 0 of "
        "a replica): no readiness probe, no engine /metrics of its own. Set by an engine "
        "plugin's inferx_engine_role_spec; not written with the spec (the plan shows it per "
        "process)",
    )

    @field_validator("argv")
    @classmethod
    def _no_shell_strings(cls, argv: tuple[str, ...]) -> tuple[str, ...]:
        if len(argv) == 1 and " " in argv[0].strip():
            raise ValueError(
                "argv must be a list of arguments, not a shell string; split it into items"
            )
        return argv

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def with_env(self, **updates: str) -> LaunchSpec:
        return self.model_copy(update={"env": {**self.env, **updates}})

    def with_args(self, *args: str) -> LaunchSpec:
        return self.model_copy(update={"argv": (*self.argv, *args)})

    def replace_flag(self, flag: str, value: str) -> LaunchSpec:
        """Set ``flag value`` (or ``flag=value``) in argv, appending it when absent."""
        argv = list(self.argv)
        for i, arg in enumerate(argv):
            if arg == flag and i + 1 < len(argv):
                argv[i + 1] = value
                return self.model_copy(update={"argv": tuple(argv)})
            if arg.startswith(flag + "="):
                argv[i] = f"{flag}={value}"
                return self.model_copy(update={"argv": tuple(argv)})
        return self.with_args(flag, value)

    def flag_value(self, flag: str) -> str | None:
        """The value given to ``flag`` in argv, or None when absent."""
        for i, arg in enumerate(self.argv):
            if arg == flag and i + 1 < len(self.argv):
                return self.argv[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
        return None
