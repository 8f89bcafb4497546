"""What the benchmark runs on: host facts and accelerators, as plain data.

Detection plugins each return a partial :class:`Platform`; the core merges
them (:func:`merge_platforms`). The same model is what ``inferx plan
--platform FILE`` reads, so a launch for an H200 or an MI355X can be reviewed
from a laptop.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Vendor = Literal["nvidia", "amd", "intel", "google", "aws", "other"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Accelerator(_Data):
    """One accelerator device as its vendor library reports it."""

    vendor: Vendor
    index: int = Field(ge=0, description="Device index as the vendor library numbers it")
    name: str = Field(description="Product name, e.g. 'NVIDIA H200' or 'AMD Instinct MI300X'")
    arch: str | None = Field(
        default=None, description="Bare architecture: 'sm_90', 'sm_100', 'gfx942', 'gfx950'"
    )
    arch_full: str | None = Field(
        default=None,
        description="Architecture as the vendor tool prints it, e.g. 'gfx942:sramecc+:xnack-'",
    )
    compute_capability: str | None = Field(default=None, description="NVIDIA only: '9.0', '10.0'")
    memory_total_mib: int | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    driver_version: str | None = None
    runtime_version: str | None = Field(default=None, description="CUDA or ROCm version")
    firmware: dict[str, str] = Field(default_factory=dict, description="e.g. {'mec': '177'}")
    partition_mode: str | None = None
    extra: dict[str, str] = Field(default_factory=dict)

    @property
    def compute_capability_major(self) -> int | None:
        if not self.compute_capability:
            return None
        return int(self.compute_capability.split(".", 1)[0])


class HostInfo(_Data):
    """The machine the benchmark (and usually the engine) runs on."""

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    machine: str | None = None
    cpu_model: str | None = None
    cpu_logical_cores: int | None = None
    cpu_physical_cores: int | None = None
    memory_total_mib: int | None = None
    python: str | None = None


class PlatformNote(_Data):
    """A fact a detector wants a person to read, e.g. why no GPU was found."""

    source: str
    message: str


class Platform(_Data):
    """Everything detected about where engines run.

    ``software`` holds versions that matter to fixes (``nccl``, ``cuda``,
    ``rocm``, ``driver``); keys are lower-case names.
    """

    host: HostInfo | None = None
    accelerators: tuple[Accelerator, ...] = ()
    software: dict[str, str] = Field(default_factory=dict)
    notes: tuple[PlatformNote, ...] = ()

    @property
    def gpu_count(self) -> int:
        return len(self.accelerators)

    @property
    def vendors(self) -> tuple[str, ...]:
        return tuple(sorted({a.vendor for a in self.accelerators}))

    def accelerators_of(self, vendor: str) -> tuple[Accelerator, ...]:
        return tuple(a for a in self.accelerators if a.vendor == vendor)

    @property
    def is_cpu_only(self) -> bool:
        return not self.accelerators


def merge_platforms(parts: Iterable[Platform]) -> Platform:
    """Merge detector answers: first host wins, accelerators and notes append.

    Accelerators seen twice (same vendor and index, e.g. two plugins asking
    one library) are kept once; software versions merge, earlier answers win.
    """
    host: HostInfo | None = None
    accelerators: list[Accelerator] = []
    seen: set[tuple[str, int]] = set()
    software: dict[str, str] = {}
    notes: list[PlatformNote] = []
    for part in parts:
        if part is None:
            continue
        if host is None and part.host is not None:
            host = part.host
        for acc in part.accelerators:
            key = (acc.vendor, acc.index)
            if key not in seen:
                seen.add(key)
                accelerators.append(acc)
        for name, value in part.software.items():
            software.setdefault(name, value)
        notes.extend(part.notes)
    accelerators.sort(key=lambda a: (a.vendor, a.index))
    return Platform(
        host=host, accelerators=tuple(accelerators), software=software, notes=tuple(notes)
    )


def load_platform(path: str | Path) -> Platform:
    """Read a platform description (the JSON that ``inferx doctor --json`` prints under
    ``platform``, or a hand-written one) with errors that name the file and field."""
    from pydantic import ValidationError

    from inferx_core.config.parsing import ParseError, loads_json, read_bounded
    from inferx_core.errors import UserFacingError

    path = Path(path)
    try:  # as strict as configs: UTF-8, bounded size and nesting, no NaN
        data = loads_json(read_bounded(path, 1 << 20, "platform file"))
    except OSError as exc:
        raise UserFacingError(f"cannot read platform file {path}: {exc.strerror or exc}") from exc
    except ParseError as exc:
        raise UserFacingError(f"invalid platform file {path}: {exc}") from None
    if isinstance(data, dict) and "platform" in data and "accelerators" not in data:
        data = data["platform"]  # accept a whole `inferx doctor --json` dump
    try:
        return Platform.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            for e in exc.errors()
        )
        raise UserFacingError(f"invalid platform file {path}: {problems}") from None
