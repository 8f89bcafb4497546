"""Vendor-neutral machinery of the GPU samplers (NVML, amdsmi, ...).

Every vendor library fails the same ways, so the policy lives here once and a
vendor sampler only says how to load, init and shut down its library, which
calls yield which metrics (and their unit conversions), and which errors mean
"not supported" or "device lost".

What each device supports is probed once in ``start``: a metric the device
answers with an unsupported error (or, where :meth:`DeviceSampler._answers`
says so, only with placeholders such as "N/A") is reported None on every read
without being called again. A metric whose keys an earlier chosen metric
already yields is not probed (it is a fallback), and an unsupported metric
whose keys a later metric yields is not reported None (the fallback decides).

Failure policy, per read:

- a GPU whose power read fails (any library error, or a power value that is
  not numeric), or which reports "lost" on any call, is left out of that
  reading (its keys are absent) while the other GPUs are still read; a lost
  GPU is never called again (calls to a GPU that fell off the bus can be
  slow) and is listed in ``lost_gpus``;
- any other library error on a single metric makes that metric None for that
  read;
- every such error is in ``last_errors`` (this read only) and is counted; at
  ``stop`` the counts become lines in ``notes``, which the recorder copies
  into the result;
- when no GPU could be read at all, ``read`` raises the sampler's
  ``read_error``, so the recorder records a gap with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from inferx_core.sdk.sampler import SamplerUnavailable

MIB = 1024 * 1024

#: The metric key whose failure drops the whole GPU from a reading (energy
#: integration needs power; a GPU without it is not read that time).
POWER_METRIC = ("power_w",)

Values = tuple[float | int | None, ...]


class DeviceReadError(RuntimeError):
    """No GPU could be read this time (every GPU failed or was lost)."""


@dataclass(frozen=True)
class Metric:
    """One library call and the metric keys (suffixes) it yields."""

    keys: tuple[str, ...]
    functions: tuple[str, ...]  # candidates, first usable wins (renamed APIs)
    args: Callable[[Any], tuple[Any, ...] | None]  # None: the library lacks an enum
    convert: Callable[[Any], Values]


@dataclass
class Reader:
    """A bound, probed metric: ``call(handle, *args)`` then ``convert``."""

    keys: tuple[str, ...]  # full names, e.g. "gpu.0.power_w"
    function: str
    call: Callable[..., Any]
    args: tuple[Any, ...]
    convert: Callable[[Any], Values]
    is_power: bool


@dataclass
class Device:
    index: int
    handle: Any
    readers: list[Reader] = field(default_factory=list)
    unsupported: dict[str, None] = field(default_factory=dict)  # keys always None


class DeviceSampler:
    """Samples the given GPU indices (and only those) through a vendor library.

    Attributes: ``gpu_ids`` (requested indices), ``interval_s``, ``notes``
    (lines for the result), ``last_errors`` (errors of the latest read),
    ``lost_gpus`` (indices reported lost), ``unsupported`` (index -> metric
    names the device does not support, reported None).

    Subclasses set ``name``, ``library`` (for messages), ``module_name`` (what
    is imported), ``metrics``, ``read_error`` and implement the hooks below;
    the rest is shared so both vendors fail alike.
    """

    name: ClassVar[str]
    library: ClassVar[str]
    module_name: ClassVar[str]
    metrics: ClassVar[tuple[Metric, ...]]
    read_error: ClassVar[type[RuntimeError]] = DeviceReadError
    gpus_label: ClassVar[str] = "GPUs"  # "AMD GPUs": as the messages name them

    def __init__(self, gpu_ids: Iterable[int], *, interval_s: float, lib: Any) -> None:
        self.gpu_ids: tuple[int, ...] = tuple(dict.fromkeys(int(i) for i in gpu_ids))
        self.interval_s = interval_s
        self.notes: list[str] = []
        self.last_errors: list[str] = []
        self.lost_gpus: list[int] = []
        self.unsupported: dict[int, list[str]] = {}
        self._lib: Any = lib  # injected by tests; else loaded in start()
        self._devices: list[Device] = []
        self._initialised = False
        self._error_counts: dict[str, int] = {}

    # -- vendor hooks --------------------------------------------------------

    def _load(self) -> Any:
        """Import the library (raise ImportError when it cannot be)."""
        raise NotImplementedError

    def _init(self, lib: Any) -> None:
        raise NotImplementedError

    def _shutdown(self, lib: Any) -> None:
        raise NotImplementedError

    def _handles(self, lib: Any) -> tuple[Container[int], Callable[[int], Any], str]:
        """(indices present, index -> handle, what the library sees, for notes).

        Raises SamplerUnavailable when the library sees no GPU at all.
        """
        raise NotImplementedError

    def _errors(self, lib: Any) -> type[BaseException] | tuple[type[BaseException], ...]:
        """The exception class(es) the library raises."""
        raise NotImplementedError

    def _is_unsupported(self, lib: Any, exc: BaseException) -> bool:
        raise NotImplementedError

    def _is_lost(self, lib: Any, exc: BaseException) -> bool:
        raise NotImplementedError

    def _describe(self, exc: BaseException) -> str:
        """One line for a library error, as notes and errors show it."""
        return f"{type(exc).__name__}: {exc}"

    def _failure_text(self, exc: BaseException) -> str:
        """The reason given when opening the devices failed unexpectedly."""
        return self._describe(exc)

    def _answers(self, metric: Metric, raw: Any) -> bool:
        """Whether a probe's answer counts as support (False: reported None)."""
        return True

    def _probed(self, device: Device) -> None:
        """Adjust a probed device (e.g. stand in a metric for a missing one)."""

    def _open_notes(self) -> list[str]:
        """Lines for ``notes`` once every requested GPU was probed."""
        return []

    # -- start ---------------------------------------------------------------

    def start(self) -> None:
        """Init the library, take handles for the requested GPUs, probe supported metrics."""
        if self._initialised:
            return
        if not self.gpu_ids:
            raise SamplerUnavailable("no supported GPU: no GPU index requested")
        lib = self._lib
        if lib is None:
            try:
                lib = self._load()
            except ImportError as exc:
                raise SamplerUnavailable(
                    f"no supported GPU: {self.module_name} not importable ({exc})"
                ) from exc
            self._lib = lib
        try:
            self._init(lib)
        except Exception as exc:  # library not found, driver not loaded, ...
            raise SamplerUnavailable(
                f"no supported GPU: {self.library} unavailable ({self._describe(exc)})"
            ) from exc
        self._initialised = True
        try:
            self._open_devices(lib)
        except SamplerUnavailable:
            self.stop()
            raise
        except Exception as exc:
            self.stop()
            raise SamplerUnavailable(
                f"no supported GPU: {self.library} failed ({self._failure_text(exc)})"
            ) from exc

    def _open_devices(self, lib: Any) -> None:
        present, handle_of, sees = self._handles(lib)
        missing: list[str] = []
        for index in self.gpu_ids:
            if index not in present:
                missing.append(f"{index} ({sees})")
                continue
            try:
                device = self._probe(lib, index, handle_of(index))
            except self._errors(lib) as exc:
                missing.append(f"{index} ({self._describe(exc)})")
                continue
            self._devices.append(device)
            if device.unsupported:
                self.unsupported[index] = list(device.unsupported)
        if missing:
            self.notes.append("GPU not sampled: " + ", ".join(missing))
        self.notes.extend(self._open_notes())
        if not self._devices:
            raise SamplerUnavailable(
                f"no supported GPU: none of the requested {self.gpus_label} could be opened: "
                + ", ".join(missing)
            )

    def _probe(self, lib: Any, index: int, handle: Any) -> Device:
        """Call every metric once; unsupported ones are None from now on.

        A lost device propagates: the device is not sampled. Any other error
        keeps the metric (it may be transient; reads report it).
        """
        errors = self._errors(lib)
        device = Device(index=index, handle=handle)
        prefix = f"gpu.{index}."
        have: set[str] = set()
        for position, metric in enumerate(self.metrics):
            if have.issuperset(metric.keys):
                continue  # a fallback, and an earlier metric already yields these keys
            keys = tuple(prefix + k for k in metric.keys)
            args = metric.args(lib)
            chosen: Callable[..., Any] | None = None
            chosen_name = ""
            for fname in metric.functions:
                fn = getattr(lib, fname, None)
                if fn is None or args is None:
                    continue
                try:
                    raw = fn(handle, *args)
                except errors as exc:
                    if self._is_lost(lib, exc):
                        raise
                    if self._is_unsupported(lib, exc):
                        continue
                    # a transient failure: keep the metric, reads will tell
                else:
                    if not self._answers(metric, raw):
                        continue
                chosen, chosen_name = fn, fname
                break
            if chosen is None:
                later = self.metrics[position + 1 :]
                if not any(m.keys == metric.keys for m in later):  # else the fallback decides
                    device.unsupported.update(dict.fromkeys(keys))
                continue
            have.update(metric.keys)
            device.readers.append(
                Reader(
                    keys,
                    chosen_name,
                    chosen,
                    args or (),
                    metric.convert,
                    metric.keys == POWER_METRIC,
                )
            )
        self._probed(device)
        return device

    # -- read ----------------------------------------------------------------

    def read(self) -> Mapping[str, float | None]:
        """One reading of every GPU still present; see the module doc for failures."""
        lib = self._lib
        error_cls = self._errors(lib)
        errors: list[str] = []
        values: dict[str, float | None] = {}
        lost_now: list[Device] = []
        for device in self._devices:
            got: dict[str, float | None] = {}
            ok = True
            for reader in device.readers:
                try:
                    raw = reader.call(device.handle, *reader.args)
                except error_cls as exc:
                    self._error(errors, device, reader, self._describe(exc))
                    if self._is_lost(lib, exc):
                        lost_now.append(device)
                        ok = False
                        break
                    if reader.is_power:
                        ok = False
                        break
                    got.update(dict.fromkeys(reader.keys))
                    continue
                converted = reader.convert(raw)
                if reader.is_power and converted[0] is None:  # amdsmi may answer "N/A"
                    self._error(errors, device, reader, "no numeric socket power")
                    ok = False
                    break
                got.update(zip(reader.keys, converted, strict=True))
            if ok:
                values.update(got)
                values.update(device.unsupported)
        for device in lost_now:
            self._devices.remove(device)
            self.lost_gpus.append(device.index)
            self.notes.append(f"gpu {device.index} lost during the run; not read since")
        self.last_errors = errors
        if not values:
            if errors:
                raise self.read_error("no GPU could be read: " + "; ".join(errors))
            raise self.read_error(f"no GPU left to read (lost: {self.lost_gpus})")
        return values

    def _error(self, errors: list[str], device: Device, reader: Reader, what: str) -> None:
        message = f"gpu {device.index}: {reader.function}: {what}"
        errors.append(message)
        self._error_counts[message] = self._error_counts.get(message, 0) + 1

    # -- stop ----------------------------------------------------------------

    def stop(self) -> None:
        """Shut the library down and turn error counts into notes; never raises."""
        try:
            for message, count in self._error_counts.items():
                self.notes.append(f"{message} ({count} read{'s' if count != 1 else ''})")
            self._error_counts.clear()
            self._devices = []
            if self._initialised:
                self._initialised = False
                self._shutdown(self._lib)
        except Exception:  # stop must not raise; a failed shutdown changes nothing
            pass
