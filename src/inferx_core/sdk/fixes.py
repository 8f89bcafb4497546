"""Container and driver fixes as data: each knows when it applies and what it changes.

A fix is a pure function ``LaunchSpec -> LaunchSpec`` plus the facts a person
needs to trust it (symptom, condition, change, reference). Plugins offer
their catalogue through ``inferx_container_fixes``; the core evaluates every
condition, skips fixes disabled by id, applies the rest in a stable order and
records what each changed, so every result says which workarounds shaped it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from inferx_core.errors import UserFacingError
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.platform import Platform

if TYPE_CHECKING:
    from inferx_core.config.models import ServerConfig


@dataclass(frozen=True, slots=True)
class FixContext:
    """What a fix may look at to decide whether it applies."""

    server: ServerConfig
    platform: Platform


@dataclass(frozen=True, slots=True)
class FixVerdict:
    applies: bool
    reason: str


Condition = Callable[[FixContext, LaunchSpec], FixVerdict]
Change = Callable[[LaunchSpec, FixContext], LaunchSpec]


@dataclass(frozen=True, slots=True)
class Fix:
    """One known problem and its workaround.

    ``condition`` explains itself: it returns a verdict with the reason in
    words ("compute capability 10.0 with NCCL 2.21.5 < 2.26.2"), which
    ``inferx doctor`` prints and results record. ``order`` sorts fixes that
    touch the same setting (lower first); ties break on ``id``.
    """

    id: str
    title: str
    symptom: str
    condition_text: str
    change_text: str
    reference: str
    condition: Condition
    change: Change
    order: int = 100
    tags: tuple[str, ...] = field(default=())

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "symptom": self.symptom,
            "condition": self.condition_text,
            "change": self.change_text,
            "reference": self.reference,
            "tags": list(self.tags),
        }


class AppliedFix(BaseModel):
    """The record a result keeps of one fix: what it changed and why."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    why: str
    changes: dict[str, Any]
    reference: str


class FixDecision(BaseModel):
    """A fix that was considered and not applied, with the reason."""

    model_config = ConfigDict(frozen=True)

    id: str
    applied: bool
    reason: str


class DuplicateFixError(UserFacingError, ValueError):
    pass


def spec_changes(before: LaunchSpec, after: LaunchSpec) -> dict[str, Any]:
    """A readable diff of two specs: fields added, removed or changed."""
    old, new = before.model_dump(mode="json"), after.model_dump(mode="json")
    changes: dict[str, Any] = {}
    for key in new:
        if old.get(key) == new[key]:
            continue
        if isinstance(new[key], dict):
            added = {k: v for k, v in new[key].items() if old[key].get(k) != v}
            removed = sorted(set(old[key]) - set(new[key]))
            entry: dict[str, Any] = {}
            if added:
                entry["set"] = added
            if removed:
                entry["removed"] = removed
            changes[key] = entry
        else:
            changes[key] = {"from": old[key], "to": new[key]}
    return changes


def ordered(fixes: Iterable[Fix]) -> list[Fix]:
    """Fixes in application order; the same id offered twice is an error."""
    by_id: dict[str, Fix] = {}
    for fix in fixes:
        if fix.id in by_id and by_id[fix.id] is not fix:
            raise DuplicateFixError(f"two fixes share the id {fix.id!r}; fix ids must be unique")
        by_id[fix.id] = fix
    return sorted(by_id.values(), key=lambda f: (f.order, f.id))


def apply_fixes(
    spec: LaunchSpec,
    fixes: Iterable[Fix],
    ctx: FixContext,
    *,
    disabled: Sequence[str] = (),
) -> tuple[LaunchSpec, list[AppliedFix], list[FixDecision]]:
    """Apply every fix whose condition holds, in order; record each decision.

    A fix's condition sees the spec as the earlier fixes left it, so fixes
    compose; disabling one by id removes only that change.
    """
    disabled_ids = set(disabled)
    applied: list[AppliedFix] = []
    decisions: list[FixDecision] = []
    for fix in ordered(fixes):
        if fix.id in disabled_ids:
            decisions.append(FixDecision(id=fix.id, applied=False, reason="disabled in config"))
            continue
        verdict = fix.condition(ctx, spec)
        if not verdict.applies:
            decisions.append(FixDecision(id=fix.id, applied=False, reason=verdict.reason))
            continue
        new_spec = fix.change(spec, ctx)
        changes = spec_changes(spec, new_spec)
        spec = new_spec
        applied.append(
            AppliedFix(
                id=fix.id,
                title=fix.title,
                why=verdict.reason,
                changes=changes,
                reference=fix.reference,
            )
        )
        decisions.append(FixDecision(id=fix.id, applied=True, reason=verdict.reason))
    return spec, applied, decisions
