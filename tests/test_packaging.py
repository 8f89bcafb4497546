"""Every distribution's wheel as the package index would see it (issue 19).

The wheels are built offline from the checkout (hatchling from the dev group,
no build isolation) and read back: the Apache-2.0 LICENSE is in each, the long
description is a README written for the index (no `make`, no relative links),
project URLs are set, every dependency has an upper bound, and no dev tool is
published as an extra.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {
    "inferx_core": ROOT,
    "inferx_vllm": ROOT / "plugins/inferx_vllm",
    "inferx_sglang": ROOT / "plugins/inferx_sglang",
    "inferx_trtllm": ROOT / "plugins/inferx_trtllm",
    "inferx_rocm": ROOT / "plugins/inferx_rocm",
    "inferx_lmeval": ROOT / "plugins/inferx_lmeval",
    "inferx_example_plugin": ROOT / "examples/inferx_example_plugin",
}
DEV_TOOLS = {"pytest", "ruff", "hypothesis", "import-linter", "aiohttp", "hatchling"}
RELATIVE_LINK = re.compile(r"\]\((?!https?://|#)[^)]*\)")


def test_repo_license_is_apache_2_and_each_distribution_has_the_same_file() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License")
    assert "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    for directory in DISTRIBUTIONS.values():
        assert (directory / "LICENSE").read_text() == text, directory


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("hatchling", reason="the dev group (make install) brings hatchling")
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(out),
            *map(str, DISTRIBUTIONS.values()),
        ],
        check=True,
        timeout=300,
    )
    built = {path.name.split("-")[0]: path for path in out.glob("*.whl")}
    assert set(built) == set(DISTRIBUTIONS)
    return built


def _metadata(wheel: Path) -> tuple[zipfile.ZipFile, object]:
    archive = zipfile.ZipFile(wheel)
    name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    return archive, Parser().parsestr(archive.read(name).decode())


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_wheel_license_and_index_metadata(wheels: dict[str, Path], dist: str) -> None:
    archive, meta = _metadata(wheels[dist])
    licenses = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert len(licenses) == 1, archive.namelist()
    assert archive.read(licenses[0]).decode() == (ROOT / "LICENSE").read_text()
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["Description-Content-Type"] == "text/markdown"
    description = meta.get_payload()
    assert len(description) > 500, "a long description written for the index"
    assert "make demo" not in description and "make test" not in description
    assert not RELATIVE_LINK.findall(description), "links on the index must be absolute"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Homepage", "Source", "Issues"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_wheel_dependencies_bounded_and_no_dev_extra(wheels: dict[str, Path], dist: str) -> None:
    _, meta = _metadata(wheels[dist])
    assert "dev" not in (meta.get_all("Provides-Extra") or [])
    for requirement in meta.get_all("Requires-Dist") or []:
        spec = requirement.split(";")[0]
        name = re.split(r"[<>=!~\[ ]", spec, maxsplit=1)[0].lower()
        assert name not in DEV_TOOLS, requirement
        assert "<" in spec or "==" in spec, f"{dist}: no upper bound on {requirement}"


def test_core_long_description_is_not_the_repo_readme(wheels: dict[str, Path]) -> None:
    _, meta = _metadata(wheels["inferx_core"])
    description = meta.get_payload()
    assert description != (ROOT / "README.md").read_text()
    assert "pip install inferx-core" in description
    assert "inferx docs" in description
