"""The example plugin against the contract, with the kit any third-party plugin can use.

Copy this file into your own plugin's tests: it checks that the entry point
loads without heavy imports, engine names are unique among everything
installed, launch specs are valid for each platform (fixes applied), fixes are
well-formed and the package index will show a description.
"""

from __future__ import annotations

from inferx_core import Accelerator, Platform
from inferx_core.testing.plugin_kit import check_launch_specs, check_plugin

TPU_VM = Platform(
    accelerators=tuple(
        Accelerator(vendor="google", index=i, name="Google TPU", arch="tpu") for i in range(4)
    )
)
NO_TPU = Platform()


def test_example_plugin_meets_the_plugin_contract() -> None:
    checked = check_plugin("inferx-example-plugin", [TPU_VM, NO_TPU])
    assert checked == {
        "entry_points": ["example-tpu"],
        "engines": ["example-tpu"],
        "fixes": ["example-tpu-megacore"],
    }


def test_launch_spec_uses_the_platforms_chips() -> None:
    (check,) = check_launch_specs("inferx-example-plugin", [TPU_VM])
    assert check.resolved.spec.gpu_ids == (0,)
    assert check.probes, "the example declares its readiness probe"
