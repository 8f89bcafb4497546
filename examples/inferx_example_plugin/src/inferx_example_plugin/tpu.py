"""What TPU hardware is here: one ``/dev/accelN`` node per chip."""

from __future__ import annotations

import glob

from inferx_core import Accelerator, Platform, PlatformNote


def find_tpu_devices(pattern: str = "/dev/accel*") -> list[str]:
    """TPU VMs expose one /dev/accelN node per chip."""
    return sorted(glob.glob(pattern))


def detect() -> Platform:
    """The TPU chips found, or a note saying why there are none (never an error)."""
    devices = find_tpu_devices()
    if not devices:
        return Platform(
            notes=(PlatformNote(source="example-tpu", message="no TPU: no /dev/accel* device"),)
        )
    return Platform(
        accelerators=tuple(
            Accelerator(vendor="google", index=i, name="Google TPU", arch="tpu")
            for i, _ in enumerate(devices)
        )
    )
