"""The split between `make test-fast` and `make test`, by marker.

A test is ``slow`` when it needs something outside InferX's own venv: a real
engine, its parser's venv, a browser, a database server, a SLURM cluster or
lm-eval. Most such tests say so by the fixture they take, so the marker is
added here from the fixture names (a new test that takes one is marked without
anyone remembering to); tests that reach an engine another way carry
``pytest.mark.slow`` themselves. ``make test-fast`` runs ``-m "not slow"``
in parallel; ``make test`` runs everything.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

#: Fixtures that start or need something outside InferX's venv.
SLOW_FIXTURES = frozenset(
    {
        "engine_python",  # vLLM CPU's venv (e2e, vLLM's parser)
        "vllm_cli",
        "sglang",  # SGLang's parser venv
        "argvs",
        "binary",  # llama-server
        "chromium",
        "headless",
        "postgres_server",
        "db_url",  # parametrized over DuckDB and PostgreSQL
        "slurm_cluster",
        "lmeval_python",
        "aiperf_bin",  # AIPerf's own venv (make aiperf)
        "guidellm_bin",  # GuideLLM's own venv (make guidellm)
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        needs = SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if needs or item.get_closest_marker("engine"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _forget_remembered_secrets() -> Iterator[None]:
    """Secret values a test's config remembered (to scrub them from any text) are the
    process's; a later test must not see its own text scrubbed by them."""
    yield
    from inferx_core.config.secrets import forget_secrets

    forget_secrets()


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt in this process, as in a terminal.

    A shell's background job (``make test &``, ``nohup make test-fast &``) starts with
    SIGINT ignored and Python then leaves it so: a test that sends itself a Ctrl-C saw
    nothing happen and failed on every such run (DID NOT RAISE)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
