"""``inferx audit``: anyone's result files judged by InferX's verdict, with a diagnosis.

Every file under the given paths that InferX can read is audited: other tools'
files (:func:`inferx_core.interop.importers.import_data`: AIPerf, GuideLLM,
``vllm bench serve``, inference-perf, InferenceX) and InferX's own results (their
stored verdict). Files of another kind (configs, AIPerf's inputs) are listed
as ignored; a file that looks like a tool's but cannot be read is an error
naming it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferx_core.errors import UserFacingError
from inferx_core.interop.diagnosis import Finding, diagnose
from inferx_core.interop.importers import import_data, malformed, read_import, sniff
from inferx_core.results.model import PointResultBase, parse_result

__all__ = ["Audit", "AuditReport", "audit_paths", "audit_result"]

#: Per-request files read beside their summary, never on their own.
_COMPANIONS = (".jsonl", ".csv", ".parquet")


@dataclass
class Audit:
    """One point of one file: its result, verdict and ranked diagnosis."""

    path: str
    result: PointResultBase
    findings: list[Finding]

    @property
    def tool(self) -> str:
        imported = self.result.provenance.imported_from
        return imported.tool if imported is not None else "InferX"

    @property
    def version(self) -> str | None:
        imported = self.result.provenance.imported_from
        return imported.version if imported is not None else self.result.provenance.inferx_version

    @property
    def not_judged(self) -> dict[str, str]:
        imported = self.result.provenance.imported_from
        return dict(imported.not_judged) if imported is not None else {}

    @property
    def trustworthy(self) -> bool:
        """Ran, no invalidating check failed, and a verdict exists at all."""
        validity = self.result.validity
        return self.result.status == "ok" and validity is not None and validity.valid

    def to_json(self) -> dict[str, Any]:
        validity = self.result.validity
        return {
            "path": self.path,
            "tool": self.tool,
            "version": self.version,
            "point_id": self.result.point_id,
            "status": self.result.status,
            "trustworthy": self.trustworthy,
            "validity": validity.model_dump(mode="json") if validity is not None else None,
            "not_judged": self.not_judged,
            "diagnosis": [f.to_json() for f in self.findings],
        }


@dataclass
class AuditReport:
    audits: list[Audit] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    ignored: list[str] = field(default_factory=list)

    @property
    def trustworthy(self) -> bool:
        return bool(self.audits) and not self.errors and all(a.trustworthy for a in self.audits)


def audit_result(result: PointResultBase, path: str) -> Audit:
    """A result (imported or InferX's own) with its diagnosis."""
    imported = result.provenance.imported_from
    tool = imported.tool if imported is not None else "InferX"
    return Audit(path, result, diagnose(result, result.validity, tool))


def _files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.is_file())
        elif path.is_file():
            yield path
        else:
            raise UserFacingError(f"{path}: no such file or folder")


def _results(path: Path) -> list[PointResultBase] | None:
    """The results in one file; None: not a file InferX reads (ignored)."""
    data = read_import(path)
    if isinstance(data, dict) and "schema_version" in data and "identity" in data:
        return [parse_result(data)]
    if sniff(data, path) is None:
        return None
    return list(import_data(data, path))


def audit_paths(paths: Iterable[Path | str]) -> AuditReport:
    """Every point under ``paths`` audited; unreadable files are errors, others ignored."""
    report = AuditReport()
    for path in _files(Path(p) for p in paths):
        if path.suffix in _COMPANIONS:
            report.errors.append((str(path), _companion_hint(path)))
            continue
        try:
            found = _results(path)
        except UserFacingError as exc:
            report.errors.append((str(path), str(exc)))
            continue
        except (ValueError, KeyError, TypeError) as exc:
            report.errors.append((str(path), malformed(path, exc)))
            continue
        if found is None:
            report.ignored.append(str(path))
            continue
        report.audits += [audit_result(r, str(path)) for r in found]
    return report


def _companion_hint(path: Path) -> str:
    return (
        f"{path.name} is read beside its summary: give profile_export_aiperf.json (AIPerf) "
        "or the folder that holds both"
    )
