"""Prompts longer than the model's context: skipped and counted, never sent to fail.

A prompt is over the context when its ``prompt_tokens + max_tokens`` exceed
``max_model_len`` (vLLM refuses such a request with a 400). Dataset and trace
workloads have lengths only known once read, so they are filtered here after
the prompts are built; random workloads are refused before launch instead
(:func:`inferx_core.config.checks.check_fits_context`). With ``api='chat'``
the count is the message content only: the chat template's tokens are not
known here and can still push a prompt over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from inferx_core.errors import UserFacingError
from inferx_core.load.prompts.prompt_set import PromptSet, PromptSpec

__all__ = ["ContextLimit", "OverContextError", "fitting_indices", "keep_prompts"]

W = TypeVar("W", bound=PromptSet)


class OverContextError(UserFacingError, ValueError):
    """Every prompt is over the context: nothing could be sent."""


@dataclass(frozen=True, slots=True)
class ContextLimit:
    """The context length prompts must fit and where it came from."""

    max_model_len: int
    source: str  # e.g. "workload.max_model_len" or "http://host:8000/v1/models"

    def describe(self, skipped: int, considered: int) -> dict[str, Any]:
        """The result's ``workload.context`` entry."""
        return {
            "max_model_len": self.max_model_len,
            "source": self.source,
            "skipped_over_context": skipped,
            "considered": considered,
            "rule": "skipped when prompt_tokens + max_tokens > max_model_len",
        }


def fitting_indices(prompts: Sequence[PromptSpec], limit: ContextLimit) -> list[int]:
    """Indices of the prompts whose tokens plus max_tokens fit the context."""
    return [
        i for i, p in enumerate(prompts) if p.prompt_tokens + p.max_tokens <= limit.max_model_len
    ]


def keep_prompts(built: W, keep: Sequence[int]) -> W:
    """``built`` with only the prompts at ``keep`` (in that order), its miss figures redone."""
    prompts = [built.prompts[i] for i in keep]
    misses = [abs(p.miss) for p in prompts if p.miss]
    return replace(
        built,
        prompts=prompts,
        missed=len(misses),
        max_abs_miss=max(misses, default=0),
        mean_abs_miss=float(np.mean(misses)) if misses else 0.0,
        notes=list(built.notes),
    )


def nothing_fits(what: str, considered: int, limit: ContextLimit) -> OverContextError:
    return OverContextError(
        f"{what}: all {considered} prompts have prompt tokens + max_tokens above max_model_len "
        f"{limit.max_model_len} ({limit.source}); nothing can be sent. Fix: shorter prompts or "
        "output lengths, or a model/server with a longer context"
    )
