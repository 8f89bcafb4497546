"""Write results in the formats other tools read (``inferx export``, ``--export``).

Per point: ``vllm`` (``<point_id>.json``, :mod:`.vllm_bench`) and
``inferencex`` (``agg_<point_id>.json`` plus ``power_validation_<point_id>.json``,
:mod:`.inferencex`). Per folder: ``csv`` (``points.csv``) and ``parquet``
(``points.parquet``, ``requests.parquet``), rewritten as points are added.
A point that cannot be written in a format is skipped with its reason; the
others are still written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from inferx_core.errors import UserFacingError
from inferx_core.interop.inferencex import NotExportable, inferencex_aggregate, power_fields
from inferx_core.interop.metadata import resolve_metadata
from inferx_core.interop.tabular import write_parquet, write_points_csv
from inferx_core.interop.vllm_bench import vllm_bench_result
from inferx_core.load.records.request import RequestRecord
from inferx_core.results.files import write_json_atomic
from inferx_core.results.model import PointResultBase
from inferx_core.results.read import (
    EXPORT_MARKER,
    is_result,
    load_results,
    read_json,
    read_request_records,
    requests_sidecar,
    sidecar_mismatch,
)

FORMATS: tuple[str, ...] = ("vllm", "inferencex", "csv", "parquet")


def parse_formats(text: str) -> tuple[str, ...]:
    """``"vllm,inferencex"`` as a tuple; an unknown name is a user error listing the known."""
    names = tuple(dict.fromkeys(n.strip().lower() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise UserFacingError(
            f"--format/--export {text!r}: unknown format {', '.join(unknown) or '(none)'}; "
            f"choose from {', '.join(FORMATS)}"
        )
    return names


@dataclass
class ExportReport:
    """What was written, and every (point, format) that was not, with why."""

    written: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)  # point id -> described metadata
    # Files under the folders that may be results but could not be used, with why.
    unusable: list[tuple[Path, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ExportOptions:
    formats: tuple[str, ...]
    output: Path
    settings: Mapping[str, str] = field(default_factory=dict)  # InferenceX metadata (--set)
    detailed: bool = False  # vllm: the per-request lists of --save-detailed
    metadata: Mapping[str, str] = field(default_factory=dict)  # vLLM's --metadata pairs
    settings_flag: str = "--set"  # how the user gives settings in this command (messages)


def _export_one(
    result: PointResultBase,
    records: Sequence[RequestRecord] | None,
    options: ExportOptions,
    report: ExportReport,
) -> None:
    wanted = [f for f in options.formats if f in ("vllm", "inferencex")]
    if not wanted:
        return
    pid = result.point_id
    if not result.measured or records is None:
        why = result.failure_reason if not result.measured else "no .requests.jsonl sidecar"
        report.skipped += [(pid, f, f"nothing measured to export ({why})") for f in wanted]
        return
    vllm = vllm_bench_result(result, records, metadata=options.metadata, detailed=options.detailed)
    if "vllm" in wanted:
        report.written.append(write_json_atomic(options.output / f"{pid}.json", vllm))
    if "inferencex" in wanted:
        try:
            _write_inferencex(result, vllm, options, report)
        except NotExportable as exc:
            report.skipped.append((pid, "inferencex", str(exc)))


def _write_inferencex(
    result: PointResultBase, vllm: dict, options: ExportOptions, report: ExportReport
) -> None:
    if result.status != "ok":
        raise NotExportable(f"status {result.status}: {result.failure_reason}")
    meta = resolve_metadata(result, options.settings, flag=options.settings_flag)
    agg = inferencex_aggregate(vllm, meta)
    power, sidecar = power_fields(result, vllm, meta)
    pid = result.point_id
    out = options.output
    sidecar["benchmark_result"] = f"{pid}.json"
    report.written.append(write_json_atomic(out / f"power_validation_{pid}.json", sidecar))
    report.written.append(write_json_atomic(out / f"agg_{pid}.json", agg | power))
    report.metadata[pid] = meta.describe()


def prepare_output(output: Path) -> None:
    """Create the folder and mark it as exports, so result readers skip its files.

    A folder that holds InferX results is refused: the marker would hide them,
    and a vLLM file would take a result's name.
    """
    if output.is_dir() and not (output / EXPORT_MARKER).exists():
        for path in output.glob("*.json"):
            if _is_result_file(path):
                raise UserFacingError(
                    f"{output} holds InferX results ({path.name}); export to another folder "
                    "(--output), e.g. RESULTS/export"
                )
    output.mkdir(parents=True, exist_ok=True)
    marker = output / EXPORT_MARKER
    if not marker.exists():
        marker.write_text("files exported by `inferx export`; not InferX results\n")


def _is_result_file(path: Path) -> bool:
    try:
        return is_result(read_json(path))
    except (OSError, ValueError):  # ParseError is a ValueError
        return False


def export_results(
    results: Iterable[tuple[PointResultBase, Sequence[RequestRecord] | None]],
    options: ExportOptions,
) -> ExportReport:
    """Write every point in every per-point format, then the folder-wide tables."""
    pairs = list(results)
    if "inferencex" in options.formats:
        # Missing metadata is the user's to fix: say so before writing anything.
        for result, _ in pairs:
            if result.status == "ok":
                resolve_metadata(result, options.settings, flag=options.settings_flag)
    prepare_output(options.output)
    report = ExportReport()
    for result, records in pairs:
        _export_one(result, records, options, report)
    if "csv" in options.formats:
        report.written.append(write_points_csv([r for r, _ in pairs], options.output))
    if "parquet" in options.formats:
        recs = {r.point_id: list(rs) for r, rs in pairs if rs is not None}
        report.written += write_parquet([r for r, _ in pairs], recs, options.output)
    return report


def export_paths(paths: Iterable[Path | str], options: ExportOptions) -> ExportReport:
    """``inferx export``: every InferX result under ``paths`` (folders or files)."""
    loaded = load_results(paths)
    if not loaded.results:
        raise UserFacingError(
            f"no InferX result files under {', '.join(str(p) for p in paths)}; "
            "give the folders `inferx bench`/`inferx run` wrote"
        )
    pairs = []
    for result in loaded.results:
        path = loaded.path_of(result)
        records = read_request_records(path) if path else None
        if path is not None and records is not None:
            _check_sidecar(result, records, path)
        pairs.append((result, records))
    report = export_results(pairs, options)
    report.unusable = list(loaded.unusable)
    return report


def _check_sidecar(
    result: PointResultBase, records: Sequence[RequestRecord], result_path: Path
) -> None:
    """The exports are recomputed from the records: a sidecar that is not the result's
    own would write another run's numbers under this point's name."""
    why = sidecar_mismatch(result, records)
    if why:
        raise UserFacingError(
            f"{requests_sidecar(result_path)} does not match {result_path} ({why}); "
            "put back the point's own .requests.jsonl, or move this one away to export "
            "the other points"
        )


class PointExporter:
    """``--export`` on ``bench``/``run``: writes each point as it finishes (an ``on_point``).

    ``roots``: the results folders of the run (``inferx run`` with configs that
    have different ``output_dir``s); each point is exported to ``export/`` in
    the root its result file is under, else to ``options.output``.
    """

    def __init__(self, options: ExportOptions, roots: Sequence[Path] = ()) -> None:
        self.options = options
        self.roots = sorted({Path(r).resolve() for r in roots}, key=lambda r: len(r.parts))
        self.done: dict[Path, list[tuple[PointResultBase, list[RequestRecord]]]] = {}
        self.report = ExportReport()

    def folder_for(self, result_path: Path | None) -> Path:
        """The export folder of a point written to ``result_path``."""
        if result_path is not None:
            where = Path(result_path).resolve()
            for root in reversed(self.roots):  # the deepest root holding the file
                if where.is_relative_to(root):
                    return root / "export"
        return self.options.output

    def __call__(self, outcome: object) -> None:
        result: PointResultBase = outcome.result  # type: ignore[attr-defined]  # a PointOutcome
        records: list[RequestRecord] = list(outcome.records)  # type: ignore[attr-defined]  # its records
        folder = self.folder_for(getattr(outcome, "path", None))
        done = self.done.setdefault(folder, [])
        done.append((result, records))
        try:
            step = export_results([(result, records)], self._per_point(folder))
        except UserFacingError as exc:  # e.g. metadata missing: reported, the run goes on
            step = ExportReport()
            step.skipped += [
                (result.point_id, f, str(exc)) for f in self._per_point(folder).formats
            ]
        if any(f in self.options.formats for f in ("csv", "parquet")):
            tables = ExportOptions(
                tuple(f for f in self.options.formats if f in ("csv", "parquet")), folder
            )
            step.written += export_results(done, tables).written
        self.report.written += step.written
        self.report.skipped += step.skipped
        self.report.metadata |= step.metadata

    def _per_point(self, folder: Path) -> ExportOptions:
        formats = tuple(f for f in self.options.formats if f in ("vllm", "inferencex"))
        return replace(self.options, formats=formats, output=folder)
