"""Where llama-server and the converted models live: InferX's engine cache.

``make llama-server`` (plugins/inferx_llamacpp/scripts/build-llama-server.sh)
builds llama.cpp's server once per version into
``<cache>/engines/llama.cpp-<version>/bin/llama-server``, beside the venvs
``inferx engine install`` makes; ``<cache>`` is ``$XDG_CACHE_HOME/inferx``,
else ``~/.cache/inferx``. The plugin finds the binary there when the config
names none.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = [
    "BINARY_ENV",
    "BINARY_NAME",
    "LLAMA_CPP_PYTHON_VERSION",
    "cached_binary",
    "engine_dir",
    "find_binary",
    "inferx_cache_dir",
    "model_cache_dir",
]

#: The llama-cpp-python sdist whose vendored llama.cpp the Makefile builds.
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
BINARY_NAME = "llama-server"
BINARY_ENV = "INFERX_LLAMA_SERVER"
#: Written last by the build: a folder without it holds a half-made build.
INSTALLED_STAMP = ".inferx-engine-installed"


def inferx_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "inferx"


def engine_dir(version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    return inferx_cache_dir() / "engines" / f"llama.cpp-{version}"


def model_cache_dir() -> Path:
    """Where converted GGUF models are kept (one file per source hash)."""
    return inferx_cache_dir() / "gguf"


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def cached_binary(version: str = LLAMA_CPP_PYTHON_VERSION) -> Path | None:
    """The finished build of ``version`` in the engine cache, else None."""
    folder = engine_dir(version)
    binary = folder / "bin" / BINARY_NAME
    return binary if (folder / INSTALLED_STAMP).is_file() and _runnable(binary) else None


def find_binary() -> Path | None:
    """llama-server: ``$INFERX_LLAMA_SERVER``, the engine cache's build, else PATH."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        return path.absolute() if _runnable(path) else None
    cached = cached_binary()
    if cached is not None:
        return cached
    on_path = shutil.which(BINARY_NAME)
    return Path(on_path) if on_path else None
