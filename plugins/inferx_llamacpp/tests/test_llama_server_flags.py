"""Every flag the plugin produces is one the real llama-server lists in its --help, and none
it calls deprecated; the server itself accepts the argv (it starts and answers /health).

Needs the binary (`make llama-server`); under INFERX_REQUIRE_ENGINE=1 (make test) its
absence fails, elsewhere it skips with how to get it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from inferx_core import Accelerator, LoadProfile, Platform, ServerConfig
from inferx_llamacpp import argv_check, hooks
from inferx_llamacpp.engine_paths import engine_dir, find_binary
from inferx_llamacpp.model_checks import GGUF_MAGIC


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file the plan takes for GGUF (its magic bytes); --help never opens it."""
    path = tmp_path_factory.mktemp("model") / "x.gguf"
    path.write_bytes(GGUF_MAGIC + bytes(20))
    return path


@pytest.fixture(scope="module")
def binary() -> Path:
    found = find_binary()
    if found is None:
        why = f"llama-server not built: run `make llama-server` (it lands in {engine_dir()})"
        if os.environ.get("INFERX_REQUIRE_ENGINE") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def help_flags(binary: Path) -> tuple[set[str], set[str]]:
    """(every flag --help lists, the flags on lines that say DEPRECATED): the plugin's own
    reading, which ``inferx plan --check-args`` uses too."""
    return argv_check.help_flags(binary)


CONFIGS = {
    "defaults": ({}, None),
    "slots-and-context": ({"max_num_seqs": 8, "max_model_len": 4096}, None),
    "from-the-load": ({"max_model_len": 1024}, LoadProfile(concurrency=[1, 32])),
    "prefix-caching": ({"prefix_caching": True}, None),
    "tp-row-split": ({"parallelism": {"tp": 2}}, None),
    "pp-layer-split": ({"parallelism": {"pp": 2}}, None),
    # speculative: the flags this build has for each method the plugin maps
    "spec-draft-model": (
        {
            "speculative": {
                "method": "draft_model",
                "draft_model": "GGUF",
                "num_speculative_tokens": 4,
            }
        },
        None,
    ),
    "spec-eagle3": (
        {"speculative": {"method": "eagle3", "draft_model": "GGUF", "num_speculative_tokens": 3}},
        None,
    ),
    "spec-mtp": ({"speculative": {"method": "mtp", "num_speculative_tokens": 2}}, None),
    "spec-ngram": (
        {"speculative": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}},
        None,
    ),
}
#: The split flags need GPUs to plan (a CPU plan refuses them); the CPU build still lists them.
GPUS = Platform(accelerators=[Accelerator(index=i, vendor="nvidia", name="H100") for i in range(2)])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_flag_is_listed_by_llama_servers_help_and_none_deprecated(
    name: str, binary: Path, help_flags: tuple[set[str], set[str]], gguf: Path
) -> None:
    fields, load = CONFIGS[name]
    if "speculative" in fields and "draft_model" in fields["speculative"]:
        fields = {"speculative": {**fields["speculative"], "draft_model": str(gguf)}}
    server = ServerConfig(engine="llamacpp", model=str(gguf), port=8080, **fields)
    spec = hooks.inferx_engine_launch_spec(server=server, platform=GPUS, load=load)
    produced = {a for a in spec.argv[1:] if a.startswith("-") and not a.lstrip("-").isdigit()}
    known, deprecated = help_flags
    assert produced - known == set(), f"llama-server --help does not list {produced - known}"
    assert produced & deprecated == set(), f"llama-server calls {produced & deprecated} deprecated"


def test_the_help_parser_sees_what_a_user_would(help_flags: tuple[set[str], set[str]]) -> None:
    known, deprecated = help_flags
    assert {"--parallel", "--ctx-size", "--metrics", "--no-cache-prompt"} <= known
    assert "--defrag-thold" in deprecated  # llama.cpp marks it so: the check can fail


def test_an_unknown_flag_fails_with_llama_servers_own_message(binary: Path) -> None:
    done = subprocess.run(
        [str(binary), "--no-such-flag"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "--no-such-flag" in done.stdout + done.stderr


def test_plan_check_args_asks_the_binary(binary: Path, tmp_path: Path, gguf: Path) -> None:
    """The same check for a user: `inferx plan --check-args` on a llama.cpp config."""
    import json
    import sys

    def plan(**extra: object) -> subprocess.CompletedProcess[str]:
        config = tmp_path / "llamacpp.json"
        cfg = {"engine": "llamacpp", "model": str(gguf), "port": 8080, **extra}
        config.write_text(json.dumps({**cfg, "executable": [str(binary)]}))
        command = [sys.executable, "-m", "inferx_core.cli", "plan", str(config), "--check-args"]
        return subprocess.run(command, capture_output=True, text=True, timeout=300)

    done = plan()
    assert done.returncode == 0, done.stderr
    assert "argv accepted by llamacpp" in done.stdout
    refused = plan(engine_args={"defrag-thold": 0.1})
    assert refused.returncode == 2
    assert "argv refused" in refused.stderr and "--defrag-thold" in refused.stderr
