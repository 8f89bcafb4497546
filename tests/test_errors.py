"""User errors print plainly (no traceback): each is a UserFacingError where it is defined."""

from __future__ import annotations

import pytest

from inferx_core.config.loader import ConfigError
from inferx_core.config.sweep import SweepError
from inferx_core.errors import UserFacingError, user_error_message
from inferx_core.load.prompts.dataset import DatasetError
from inferx_core.sdk.executor import ExecutorError
from inferx_core.sdk.fixes import DuplicateFixError
from inferx_core.sdk.manager import PluginError, PluginHookError
from inferx_core.sdk.registries import EngineConflictError, EngineNotFoundError

USER_ERRORS = [
    ConfigError("run.yaml", ["workload.isl: must be >= 1"]),
    SweepError("two sweep combinations write the same point id"),
    DatasetError("data.jsonl:3: no prompt; fix: add a prompt"),
    ExecutorError("sbatch not found"),
    DuplicateFixError("fix 'x' is registered twice"),
    PluginError("plugin 'p' failed to load"),
    PluginHookError("p", "inferx_engine_launch", ValueError("bad")),
    EngineConflictError("engine 'vllm' is registered by two plugins"),
    EngineNotFoundError("no engine 'vlm'; known: vllm"),
]


@pytest.mark.parametrize("exc", USER_ERRORS, ids=lambda e: type(e).__name__)
def test_user_errors_print_their_message(exc: Exception) -> None:
    assert isinstance(exc, UserFacingError)
    assert user_error_message(exc) == str(exc)


def test_base_classes_callers_catch_are_kept() -> None:
    assert issubclass(ConfigError, ValueError)
    assert issubclass(DatasetError, ValueError)
    assert issubclass(DuplicateFixError, ValueError)
    assert issubclass(EngineNotFoundError, LookupError)
    assert issubclass(PluginHookError, RuntimeError)


def test_a_missing_file_is_a_user_error_and_a_bug_is_not() -> None:
    missing = FileNotFoundError(2, "No such file or directory", "run.yaml")
    assert user_error_message(missing) == str(missing)
    assert user_error_message(ValueError("a bug")) is None
    assert user_error_message(KeyError("a bug")) is None
