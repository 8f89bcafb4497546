"""launch/image.py, image_build.py: the daemon's and an image's absence are one line with
the fix; an image whose inputs did not change is not built again. A fake ``docker`` on
PATH plays the daemon here (the real one: tests/e2e/test_docker_*_e2e.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from docker_support import install_fake_docker
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.launch import image, image_build
from inferx_core.launch.image import DockerUnavailable, daemon_problem, require_image
from inferx_core.launch.image_build import ImageRecipe, build_image


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return install_fake_docker(tmp_path, monkeypatch)


def test_no_client_and_no_daemon_each_say_how_to_start_one(
    fake_docker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = daemon_problem()
    assert problem is not None and "no Docker daemon answers" in problem
    assert ".ci/docker-daemon start" in problem and "\n" not in problem
    monkeypatch.setenv("PATH", str(fake_docker / "empty"))
    assert "no docker client here" in (daemon_problem() or "")


def test_a_missing_image_names_the_build_and_the_pull(fake_docker: Path) -> None:
    (fake_docker / "up").write_text("")
    with pytest.raises(DockerUnavailable, match=r"image x/y:1 is not here: build it .*docker pull"):
        require_image("x/y:1")


def test_the_cli_prints_one_line_not_a_traceback(fake_docker: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "engine", "image", "versions", "x/y:1"],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "no Docker daemon answers" in done.stderr


def _recipe(made: list[str], inputs: dict[str, str]) -> ImageRecipe:
    return ImageRecipe("inferx/t:1", inputs, lambda folder, digest: made.append(digest))


def test_a_build_with_the_inputs_of_the_image_here_is_a_no_op(fake_docker: Path) -> None:
    (fake_docker / "up").write_text("")
    made: list[str] = []
    recipe = _recipe(made, {"wheels": "a.whl:10"})
    labels = {image.INPUTS_LABEL: recipe.digest}
    (fake_docker / "image.json").write_text(
        json.dumps([{"Id": "sha256:1", "Config": {"Labels": labels}}])
    )
    outcome = build_image(recipe)
    assert outcome.cached and outcome.image_id == "sha256:1" and made == []
    # other inputs: built (the fake leaves the old label, so the check after the build fails)
    with pytest.raises(DockerUnavailable, match="left no image with its label"):
        build_image(_recipe(made, {"wheels": "b.whl:10"}))
    assert len(made) == 1


@given(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=4))
def test_the_digest_is_a_function_of_the_inputs_alone(inputs: dict[str, str]) -> None:
    one, two = _recipe([], inputs), _recipe([], dict(reversed(list(inputs.items()))))
    assert one.digest == two.digest and len(one.digest) == 20
    assert one.digest != _recipe([], {**inputs, "extra\0": "x"}).digest


def test_a_failed_step_is_one_line_naming_its_log(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    with pytest.raises(DockerUnavailable) as err:
        image_build.run_logged(["sh", "-c", "echo boom; exit 3"], folder, "docker build of x")
    assert str(err.value).startswith("docker build of x failed (exit 3): boom; full log: ")
    assert (tmp_path / "b.log").read_text().endswith("exit 3\nboom\n")  # the command, its output
