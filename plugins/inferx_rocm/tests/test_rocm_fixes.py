"""The ROCm fix catalogue: each fix's condition, change and what the user can override."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fake_amdsmi as fake
import pytest

from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.sdk.fixes import FixContext, apply_fixes
from inferx_core.sdk.launch_spec import LaunchSpec, PreflightWait
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Accelerator, Platform, load_platform
from inferx_rocm import fixes
from inferx_rocm.hooks import inferx_container_fixes
from inferx_rocm.sampler import AmdSmiSampler

PLATFORMS = Path(__file__).resolve().parents[3] / "tests" / "platforms"
MI300X = load_platform(PLATFORMS / "mi300x8.json")
MI325X = load_platform(PLATFORMS / "mi325x8.json")
MI355X = load_platform(PLATFORMS / "mi355x8.json")
H200 = load_platform(PLATFORMS / "h200x8.json")
IDS = [f.id for f in fixes.FIXES]


@pytest.fixture(scope="module")
def pm() -> Any:
    return get_plugin_manager(env={"INFERX_PLUGINS": "rocm,vllm,sglang"})


def plan_one(pm: Any, platform: Platform, **config: Any) -> dict[str, Any]:
    from inferx_core.cli.run import plan

    config.setdefault("model", "m")
    (item,) = plan([RunConfig(**config)], pm, platform)
    return item


def applied(item: dict[str, Any]) -> list[str]:
    return [f["id"] for f in item["fixes_applied"] if f["id"].startswith("rocm-")]


def reason(item: dict[str, Any], fix_id: str) -> str:
    for f in item["fixes_not_applied"]:
        if f["id"] == fix_id:
            return f["reason"]
    raise AssertionError(f"{fix_id} was applied: {applied(item)}")


def test_catalogue_is_data_with_unique_rocm_ids() -> None:
    offered = inferx_container_fixes()
    assert [f.id for f in offered] == IDS and len(set(IDS)) == len(IDS)
    assert all(i.startswith("rocm-") for i in IDS)
    for fix in offered:
        d = fix.describe()
        for key in ("title", "symptom", "condition", "change", "reference"):
            assert d[key].strip(), (fix.id, key)
        assert "rocm" in d["tags"]
    assert set(IDS) == {
        "rocm-visible-devices",
        "rocm-aiter-gpu-archs",
        "rocm-aiter-vllm",
        "rocm-aiter-sglang",
        "rocm-mi355x-chunked-prefill-cap",
        "rocm-mi355x-no-core-dumps",
        "rocm-hsa-no-scratch-reclaim",
        "rocm-docker-devices",
        "rocm-gpu-memory-preflight",
    }


@pytest.mark.parametrize("name", ["h200x8.json", "b200x8.json", "cpu.json"])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_nothing_applies_without_amd_gpus(pm: Any, name: str, engine: str) -> None:
    item = plan_one(pm, load_platform(PLATFORMS / name), engine=engine)
    assert applied(item) == []
    assert {fix_id: reason(item, fix_id) for fix_id in IDS} == dict.fromkeys(
        IDS, "no AMD GPU on this platform"
    )


# -- visibility -------------------------------------------------------------------------------


def test_visibility_for_gpus_past_zero(pm: Any) -> None:
    item = plan_one(pm, MI300X, engine="vllm", parallelism={"tp": 4}, gpu_ids=[4, 5, 6, 7])
    env = item["spec"]["env"]
    assert env["ROCR_VISIBLE_DEVICES"] == "4,5,6,7"
    assert env["HIP_VISIBLE_DEVICES"] == "0,1,2,3"  # HIP counts the devices ROCr exposes
    assert "CUDA_VISIBLE_DEVICES" not in env
    assert item["spec"]["unset_env"] == ["CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"]


def test_user_rocr_only_gets_a_following_hip(pm: Any) -> None:
    item = plan_one(
        pm, MI300X, engine="vllm", parallelism={"tp": 2}, engine_env={"ROCR_VISIBLE_DEVICES": "6,7"}
    )
    env = item["spec"]["env"]
    assert (env["ROCR_VISIBLE_DEVICES"], env["HIP_VISIBLE_DEVICES"]) == ("6,7", "0,1")
    assert "ROCR_VISIBLE_DEVICES=6,7 set in engine_env" in item["fixes_applied"][0]["why"]


@pytest.mark.parametrize("given", [{"HIP_VISIBLE_DEVICES": "3"}, {"CUDA_VISIBLE_DEVICES": "2"}])
def test_user_visibility_wins(pm: Any, given: dict[str, str]) -> None:
    item = plan_one(pm, MI300X, engine="vllm", engine_env=given)
    assert "rocm-visible-devices" not in applied(item)
    assert "left as given" in reason(item, "rocm-visible-devices")
    assert "ROCR_VISIBLE_DEVICES" not in item["spec"]["env"]
    assert item["spec"]["unset_env"] == []


# -- AITER --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "want"),
    [
        (None, "gfx942"),
        ("native", "gfx942"),
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("gfx942:sramecc+:xnack-;gfx950:xnack-", "gfx942;gfx950"),
    ],
)
def test_gpu_archs_is_bare(pm: Any, given: str | None, want: str) -> None:
    env = {"GPU_ARCHS": given} if given else {}
    item = plan_one(pm, MI300X, engine="vllm", engine_env=env)
    assert item["spec"]["env"]["GPU_ARCHS"] == want
    assert "rocm-aiter-gpu-archs" in applied(item)


def test_bare_gpu_archs_from_the_user_is_kept(pm: Any) -> None:
    item = plan_one(pm, MI355X, engine="vllm", engine_env={"GPU_ARCHS": "gfx950"})
    assert reason(item, "rocm-aiter-gpu-archs") == "GPU_ARCHS=gfx950 is already a bare arch"


def test_unknown_arch_is_not_guessed(pm: Any) -> None:
    platform = Platform(accelerators=(Accelerator(vendor="amd", index=0, name="AMD GPU"),))
    item = plan_one(pm, platform, engine="vllm")
    assert "GPU_ARCHS" not in item["spec"]["env"]
    assert "architecture is unknown" in reason(item, "rocm-aiter-gpu-archs")
    assert "gfx942/gfx950 only" in reason(item, "rocm-aiter-vllm")


def test_aiter_only_on_cdna3_and_cdna4(pm: Any) -> None:
    mi250 = Platform(
        accelerators=(
            Accelerator(vendor="amd", index=0, name="AMD Instinct MI250X", arch="gfx90a"),
        )
    )
    item = plan_one(pm, mi250, engine="sglang")
    assert (
        reason(item, "rocm-aiter-sglang") == "AITER supports gfx942/gfx950 only (GPU arch gfx90a)"
    )
    assert "--attention-backend" not in item["spec"]["argv"]


def test_vllm_user_env_wins(pm: Any) -> None:
    item = plan_one(pm, MI300X, engine="vllm", engine_env={"VLLM_ROCM_USE_AITER": "0"})
    assert item["spec"]["env"]["VLLM_ROCM_USE_AITER"] == "0"
    assert reason(item, "rocm-aiter-vllm") == "VLLM_ROCM_USE_AITER=0 set in engine_env"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_plugin_option_turns_aiter_off(pm: Any, engine: str) -> None:
    item = plan_one(pm, MI325X, engine=engine, plugin_options={"rocm": {"aiter": False}})
    spec = item["spec"]
    assert "VLLM_ROCM_USE_AITER" not in spec["env"] and "SGLANG_USE_AITER" not in spec["env"]
    assert "--attention-backend" not in spec["argv"]
    assert "plugin_options.rocm.aiter" in reason(item, f"rocm-aiter-{engine}")
    assert spec["env"]["GPU_ARCHS"] == "gfx942"  # the crash fix stays


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"rocm": {"aitre": False}}, "plugin_options.rocm.aitre: unknown option; known: aiter"),
        ({"rocm": {"aiter": "no"}}, "plugin_options.rocm.aiter must be bool"),
        ({"rocm": "off"}, "plugin_options.rocm must be a mapping"),
    ],
)
def test_bad_plugin_options_are_the_user_s_to_fix(
    pm: Any, options: dict[str, Any], match: str
) -> None:
    with pytest.raises(UserFacingError, match=match):
        plan_one(pm, MI300X, engine="vllm", plugin_options=options)


def test_sglang_user_backend_kept_and_env_still_set(pm: Any) -> None:
    item = plan_one(pm, MI300X, engine="sglang", engine_args={"attention-backend": "triton"})
    argv = item["spec"]["argv"]
    assert argv[argv.index("--attention-backend") + 1] == "triton"
    assert argv.count("--attention-backend") == 1
    assert item["spec"]["env"]["SGLANG_USE_AITER"] == "1"


def test_sglang_aiter_env_off_means_no_aiter_backend(pm: Any) -> None:
    item = plan_one(pm, MI300X, engine="sglang", engine_env={"SGLANG_USE_AITER": "0"})
    assert "--attention-backend" not in item["spec"]["argv"]
    assert reason(item, "rocm-aiter-sglang") == "SGLANG_USE_AITER=0 set in engine_env"


def test_disable_fixes_removes_one_fix_only(pm: Any) -> None:
    item = plan_one(pm, MI300X, engine="sglang", disable_fixes=["rocm-aiter-sglang"])
    assert "--attention-backend" not in item["spec"]["argv"]
    assert reason(item, "rocm-aiter-sglang") == "disabled in config"
    assert "rocm-aiter-gpu-archs" in applied(item)


# -- MI355X -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "want", "why"),
    [
        ({"chunked-prefill-size": 196608}, "32768", None),
        ({"chunked-prefill-size": 16384}, "16384", "--chunked-prefill-size 16384 <= 32768"),
        ({"chunked-prefill-size": -1}, "-1", "chunked prefill disabled"),
        ({}, None, "not given"),
    ],
)
def test_mi355x_chunked_prefill_cap(
    pm: Any, args: dict[str, Any], want: str | None, why: str | None
) -> None:
    item = plan_one(pm, MI355X, engine="sglang", engine_args=args)
    argv = item["spec"]["argv"]
    got = argv[argv.index("--chunked-prefill-size") + 1] if want else None
    assert got == want
    assert argv.count("--chunked-prefill-size") == (1 if want else 0)
    if why:
        assert why in reason(item, "rocm-mi355x-chunked-prefill-cap")
    assert item["spec"]["ulimits"] == {"core": 0}  # core dumps off whatever the size


def test_mi355x_cap_leaves_vllm_and_other_gpus_alone(pm: Any) -> None:
    vllm = plan_one(pm, MI355X, engine="vllm", engine_args={"max-num-batched-tokens": 131072})
    argv = vllm["spec"]["argv"]
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "131072"
    assert "not affected" in reason(vllm, "rocm-mi355x-chunked-prefill-cap")
    mi300 = plan_one(pm, MI300X, engine="sglang", engine_args={"chunked-prefill-size": 196608})
    assert "196608" in mi300["spec"]["argv"] and mi300["spec"]["ulimits"] == {}


# -- MEC firmware -------------------------------------------------------------------------------


def with_mec(platform: Platform, *mecs: str | None) -> Platform:
    accs = []
    for acc, mec in zip(platform.accelerators, mecs, strict=False):
        accs.append(acc.model_copy(update={"firmware": {"mec": mec} if mec else {}}))
    return platform.model_copy(update={"accelerators": tuple(accs)})


def test_scratch_reclaim_threshold(pm: Any) -> None:
    old = plan_one(pm, MI300X, engine="vllm")  # mec 170
    assert old["spec"]["env"]["HSA_NO_SCRATCH_RECLAIM"] == "1"
    fixed = plan_one(pm, MI325X, engine="vllm")  # mec 177
    assert "HSA_NO_SCRATCH_RECLAIM" not in fixed["spec"]["env"]
    assert reason(fixed, "rocm-hsa-no-scratch-reclaim") == "MEC firmware 177 >= 177"
    mixed = plan_one(pm, with_mec(MI325X, "177", "176"), engine="vllm", parallelism={"tp": 2})
    assert mixed["spec"]["env"]["HSA_NO_SCRATCH_RECLAIM"] == "1"
    unknown = plan_one(pm, with_mec(MI325X, None), engine="vllm")
    assert "unknown for gpu 0" in reason(unknown, "rocm-hsa-no-scratch-reclaim")


def test_scratch_reclaim_not_on_gfx950_firmware_numbering(pm: Any) -> None:
    item = plan_one(pm, MI355X, engine="sglang")  # mec 24: a different numbering
    assert "HSA_NO_SCRATCH_RECLAIM" not in item["spec"]["env"]
    assert "numbered separately" in reason(item, "rocm-hsa-no-scratch-reclaim")


def test_scratch_reclaim_user_value_wins(pm: Any) -> None:
    item = plan_one(pm, MI300X, engine="vllm", engine_env={"HSA_NO_SCRATCH_RECLAIM": "0"})
    assert item["spec"]["env"]["HSA_NO_SCRATCH_RECLAIM"] == "0"


# -- docker -------------------------------------------------------------------------------------


def test_docker_devices_and_options(pm: Any) -> None:
    item = plan_one(pm, MI300X, engine="vllm", launcher="docker", image="rocm/vllm:latest")
    spec, argv = item["spec"], item["launcher"]["argv"]
    assert spec["devices"] == ["/dev/kfd", "/dev/dri"]
    assert "--gpus" not in argv
    assert argv[argv.index("--device") : argv.index("--device") + 4] == [
        "--device",
        "/dev/kfd",
        "--device",
        "/dev/dri",
    ]
    for name in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_ARCHS"):
        assert argv[argv.index(name) - 1] == "-e"
    if fixes.docker_args_supported():
        assert list(spec["docker_args"]) == list(fixes.DOCKER_ARGS)
        joined = " ".join(argv)
        assert "--group-add video" in joined and "--security-opt seccomp=unconfined" in joined
    else:
        assert any("--group-add video" in w for w in spec["warnings"])


def test_docker_args_when_the_spec_carries_them() -> None:
    """Against the field the lead adds (``docker_args: tuple[str, ...]``)."""

    class SpecWithDockerArgs(LaunchSpec):
        docker_args: tuple[str, ...] = ()

    base = SpecWithDockerArgs(
        engine="vllm",
        argv=("vllm", "serve", "m"),
        port=8000,
        image="rocm/vllm",
        gpu_ids=(0,),
        docker_args=("--cap-add", "SYS_PTRACE"),
    )
    ctx = FixContext(server=ServerConfig(engine="vllm", model="m", port=8000), platform=MI300X)
    (fix,) = [f for f in fixes.FIXES if f.id == "rocm-docker-devices"]
    assert fix.condition(ctx, base).applies
    out = fix.change(base, ctx)
    assert out.devices == ("/dev/kfd", "/dev/dri") and out.warnings == ()
    assert out.docker_args == (
        "--cap-add",
        "SYS_PTRACE",
        "--group-add",
        "video",
        "--security-opt",
        "seccomp=unconfined",
    )
    assert not fix.condition(ctx, out).applies  # nothing left to add


def test_process_launch_gets_no_devices(pm: Any) -> None:
    item = plan_one(pm, MI300X, engine="vllm")
    assert item["spec"]["devices"] == []
    assert reason(item, "rocm-docker-devices") == "not a container launch (no image)"


# -- preflight ----------------------------------------------------------------------------------


def test_preflight_wait_added_once() -> None:
    ctx = FixContext(server=ServerConfig(engine="vllm", model="m", port=8000), platform=MI300X)
    spec = LaunchSpec(engine="vllm", argv=("vllm",), port=8000, gpu_ids=(0, 1))
    out, _, _ = apply_fixes(spec, fixes.FIXES, ctx)
    (wait,) = out.preflight
    assert (wait.kind, wait.threshold) == ("gpu_memory_below", 0.10) and wait.reason
    again, applied_fixes, _ = apply_fixes(out, fixes.FIXES, ctx)
    assert len(again.preflight) == 1
    assert "rocm-gpu-memory-preflight" not in [a.id for a in applied_fixes]


def test_preflight_checker_reads_the_amdsmi_sampler() -> None:
    """The core's vendor-neutral check: gpu.<i>.mem_used_mib over memory_total_mib."""
    preflight = pytest.importorskip("inferx_core.launch.preflight")
    gpus = [fake.mi300x(vram_used_mb=120_000), fake.mi300x(vram_used_mb=283)]
    amd = fake.FakeAmdSmi(gpus)
    platform = MI300X
    spec = LaunchSpec(
        engine="vllm",
        argv=("vllm",),
        port=8000,
        gpu_ids=(0, 1),
        preflight=(PreflightWait(kind="gpu_memory_below", threshold=0.10, timeout_s=60),),
    )

    def drain(seconds: float) -> None:  # the previous job frees its memory while we wait
        gpus[0].vram_used_mb = max(gpus[0].vram_used_mb - 60_000, 500)

    checks = preflight.run_preflight(
        spec, platform, lambda: [AmdSmiSampler([0, 1], amdsmi=amd.as_module())], sleep=drain
    )
    assert checks[0]["ok"] is True
    assert set(checks[0]["used"]) == {"0", "1"}
    assert amd.initialised == 0

    gpus[1].vram_used_mb = 150_000
    busy = spec.model_copy(
        update={
            "preflight": (PreflightWait(kind="gpu_memory_below", threshold=0.1, timeout_s=0.01),)
        }
    )
    with pytest.raises(preflight.PreflightTimeout, match=r"gpu 1 at 76% of memory in use"):
        preflight.run_preflight(
            busy,
            platform,
            lambda: [AmdSmiSampler([0, 1], amdsmi=amd.as_module())],
            sleep=lambda s: None,
        )
