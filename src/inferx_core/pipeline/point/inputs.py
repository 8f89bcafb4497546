"""User input checked before anything is launched or sent, so a typo costs no engine start.

:func:`check_workload_files` reads the dataset and finds the tokenizer
(``inferx run`` before the launch, ``inferx bench`` before the first request,
``inferx validate``); :func:`check_server_context` compares the longest
request with the max length the server reports (vLLM and SGLang list
``max_model_len`` in ``/v1/models``). Each raises a UserFacingError naming
the field or file and the fix.
"""

from __future__ import annotations

from typing import Any

from inferx_core.config.checks import check_fits_context
from inferx_core.config.models import Workload
from inferx_core.config.reasoning import reasoning_body
from inferx_core.errors import UserFacingError
from inferx_core.load.prompts.dataset_formats import ColumnMap, load_dataset
from inferx_core.load.prompts.traces import check_trace_file


class InputError(UserFacingError, ValueError):
    """A setting that cannot work; the message names it and the fix."""


def check_workload_files(workload: Workload, where: str = "workload") -> None:
    """The dataset parses (every line) and the tokenizer file exists, when they are given;
    a reasoning knob is on the chat API."""
    if workload.kind == "dataset" and workload.dataset is not None:
        columns = ColumnMap(**workload.dataset_columns) if workload.dataset_columns else None
        # DatasetError names file, line and fix; a line over the limit is never read whole
        load_dataset(workload.dataset, columns, workload.dataset_max_line_bytes)
    if workload.kind == "trace" and workload.trace is not None and workload.trace_format:
        check_trace_file(workload.trace, workload.trace_format)  # names file, line, field
    try:
        reasoning_body(workload.reasoning, workload.api)  # sent through the chat API only
    except ValueError as exc:
        raise InputError(f"{where}.reasoning: {exc}") from None
    tokenizer = workload.tokenizer
    if tokenizer is not None and not tokenizer.is_file():
        raise InputError(
            f"{where}.tokenizer: {tokenizer} is not a file; give the model's tokenizer.json "
            "or remove tokenizer: (the server's /tokenize is used then)"
        )


def served_max_model_len(
    base_url: str, model: str, headers: dict[str, str] | None = None
) -> int | None:
    """``max_model_len`` of ``model`` in the server's /v1/models, or None when not reported."""
    import httpx

    try:
        reply = httpx.get(base_url.rstrip("/") + "/v1/models", headers=headers, timeout=10.0)
        entries: list[Any] = reply.json().get("data", []) if reply.is_success else []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    for entry in entries:
        if isinstance(entry, dict) and entry.get("id") == model:
            value = entry.get("max_model_len")
            return value if isinstance(value, int) and value > 0 else None
    return None


def check_server_context(
    workload: Workload, base_url: str, model: str, headers: dict[str, str] | None = None
) -> int | None:
    """Refuse a workload whose longest request exceeds the server's max length; returns it."""
    limit = served_max_model_len(base_url, model, headers)
    try:
        check_fits_context(workload, limit, f"reported by {base_url}/v1/models for {model}")
    except ValueError as exc:
        raise InputError(f"workload: {exc}") from None
    return limit
