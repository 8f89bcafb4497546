"""A fix whose condition names NCCL's version evaluates it on the image's NCCL, read from
the image (launch/image_versions.py), where the image is here; `inferx plan` says so.
A fake ``docker`` (tests/docker_support.py) plays the daemon and the image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from docker_support import install_fake_docker

from inferx_core.cli.run import plan
from inferx_core.config.models import RunConfig
from inferx_core.launch.image_versions import cache_file, version_in_image
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import load_platform

PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"
IMAGE = "vllm/vllm-openai:v0.8.5"  # the known-images table says NCCL 2.21.5


def jit_cache_reason() -> str:
    """Why `inferx plan --platform b200x8.json` applies the NCCL SM100 JIT-cache fix or not."""
    cfg = RunConfig(
        engine="vllm",
        model="m",
        output_dir="/tmp/inferx-results",
        parallelism={"tp": 8},
        launcher="docker",
        image=IMAGE,
    )
    (item,) = plan([cfg], get_plugin_manager(env={}), load_platform(PLATFORMS / "b200x8.json"))
    fixes = item["fixes_applied"] + item["fixes_not_applied"]
    return next(f.get("why") or f["reason"] for f in fixes if f["id"] == "nccl-sm100-jit-cache")


def _image_here(tmp_path: Path, nccl: str) -> None:
    (tmp_path / "up").write_text("")
    (tmp_path / "image.json").write_text(json.dumps([{"Id": "sha256:abc123", "Config": {}}]))
    cached = cache_file("sha256:abc123")  # under tmp_path (XDG_CACHE_HOME): as if probed
    cached.parent.mkdir(parents=True)
    found = {"id": "sha256:abc123", "versions": {"vllm": "0.8.5", "nvidia-nccl-cu12": nccl}}
    cached.write_text(json.dumps(found))


def test_the_image_s_own_nccl_beats_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    install_fake_docker(tmp_path, monkeypatch)
    _image_here(tmp_path, "2.27.3")
    assert version_in_image(IMAGE, "nvidia-nccl-cu12") == (
        "2.27.3",
        f"read from image {IMAGE}, sha256:abc123",
    )
    # the table's 2.21.5 would apply the fix; the image's own 2.27.3 does not need it
    assert jit_cache_reason() == (
        f"NCCL 2.27.3 (read from image {IMAGE}, sha256:abc123) >= 2.26.2 carries SM100 code"
    )


def test_without_a_daemon_the_table_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    install_fake_docker(tmp_path, monkeypatch)  # no `up`: no daemon answers
    assert version_in_image(IMAGE, "nvidia-nccl-cu12") is None
    assert f"NCCL 2.21.5 (image {IMAGE}, known-images table)" in jit_cache_reason()
