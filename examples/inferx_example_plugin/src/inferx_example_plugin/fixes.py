"""The example's one known problem and its workaround, as data (``inferx fixes`` lists it)."""

from __future__ import annotations

from inferx_core import Fix, FixContext, FixVerdict, LaunchSpec
from inferx_example_plugin.launch import ENGINE


def _on_tpu(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    chips = len(ctx.platform.accelerators_of("google"))
    if spec.engine == ENGINE and chips:
        return FixVerdict(True, f"{chips} TPU chip(s) detected")
    return FixVerdict(False, "no TPU on this platform")


def catalogue() -> list[Fix]:
    return [
        Fix(
            id="example-tpu-megacore",
            title="Enable megacore fusion for TPU servers",
            symptom="Lower decode throughput when each core runs its own program",
            condition_text="engine example-tpu on a platform with Google TPU chips",
            change_text="sets LIBTPU_INIT_ARGS=--xla_tpu_enable_megacore_fusion=true",
            reference="docs/writing-a-plugin.md",
            condition=_on_tpu,
            change=lambda spec, ctx: spec.with_env(
                LIBTPU_INIT_ARGS="--xla_tpu_enable_megacore_fusion=true"
            ),
        )
    ]
