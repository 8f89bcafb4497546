"""PNG plots of a result set (matplotlib, Agg, imported only when a plot is drawn).

Figures are built with matplotlib's object API (``Figure`` + the Agg
canvas), never pyplot: no global state, no display needed, safe to call
from any program. Each function returns the PNG path, or None when the rows
hold nothing to draw.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from inferx_core.analysis.pareto import pareto_front
from inferx_core.analysis.points import INTERACTIVITY, LATENCY, THROUGHPUT
from inferx_core.sdk.numbers import is_finite_number

DPI = 110
COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def _figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (9.0, 5.5)) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _tick_texts(fig: Any) -> set[int]:
    """The ids of the figure's tick labels and offset texts: the formatters' own text."""
    out: set[int] = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            out.add(id(axis.get_offset_text()))
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                out.update((id(tick.label1), id(tick.label2)))
    return out


def plain_figure(fig: Any) -> None:
    """Every text in ``fig`` that can hold data (titles, labels, legend, annotations) drawn
    as the characters it holds: ``$...$`` is not mathtext (nor LaTeX under ``text.usetex``),
    so a name with dollars shows as written and a malformed one cannot fail the save. And
    the axes' numbers read as they are: no "+1.25e2" offset or "1e6" corner factor, which
    turn ticks of points at 124.96-125.04 into -0.04 ... 0.04."""
    from matplotlib.text import Text
    from matplotlib.ticker import ScalarFormatter

    tick_texts = _tick_texts(fig)
    for text in fig.findobj(Text):
        if id(text) not in tick_texts:
            text.set_parse_math(False)
            text.set_usetex(False)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            if isinstance(formatter, ScalarFormatter):
                formatter.set_useOffset(False)
                formatter.set_scientific(False)


def _save(fig: Any, path: Path) -> Path:
    plain_figure(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI)
    return path


def _ok(rows: Iterable[Mapping[str, Any]], *fields: str) -> list[Mapping[str, Any]]:
    def usable(r: Mapping[str, Any]) -> bool:
        return r.get("status") == "ok" and all(is_finite_number(r.get(f)) for f in fields)

    return [r for r in rows if usable(r)]


def _groups(rows: Sequence[Mapping[str, Any]], key: str = "group") -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in rows:
        out.setdefault(str(r.get(key)), []).append(r)
    return out


def _assumed_note(rows: Sequence[Mapping[str, Any]]) -> str:
    assumed = sorted({r["num_gpus"] for r in rows if r.get("num_gpus_source") != "result"})
    if not assumed:
        return ""
    return f" (GPU count assumed {', '.join(map(str, assumed))} where the result has none)"


def _label_points(ax: Any, members: Sequence[Mapping[str, Any]], xf: str, yf: str) -> None:
    for r in members:
        if r.get("concurrency") is not None:
            ax.annotate(
                f"c{r['concurrency']}",
                (r[xf], r[yf]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=7,
                color="#444444",
            )


def _throughput_front(
    members: Sequence[Mapping[str, Any]], x_field: str, x_direction: str
) -> list[Mapping[str, Any]]:
    direction: Literal["max", "min"] = "max" if x_direction == "max" else "min"
    return pareto_front(members, lambda r: (r[x_field], r[THROUGHPUT]), direction, "max")


#: The engine's /metrics gauges are sampled: a step shows up to one scrape interval late.
GAUGE_NOTE = "engine gauge, scraped from /metrics: lags by up to one sampling interval"


def _plot_group(
    ax: Any, name: str, members: Sequence[Mapping[str, Any]], color: str, x_field: str, x_dir: str
) -> None:
    """One group's points, its Pareto frontier as a line, and concurrency labels."""
    ax.scatter(
        [r[x_field] for r in members],
        [r[THROUGHPUT] for r in members],
        color=color,
        alpha=0.55,
        s=28,
        label=name,
    )
    front = _throughput_front(members, x_field, x_dir)
    ax.plot(
        [r[x_field] for r in front],
        [r[THROUGHPUT] for r in front],
        color=color,
        linewidth=2,
        marker="o",
        markersize=5,
    )
    _label_points(ax, members, x_field, THROUGHPUT)


def _plot_overall_frontiers(
    ax: Any, points: Sequence[Mapping[str, Any]], x_field: str, x_direction: str
) -> None:
    """Dashed frontier over all groups, one per scenario (the first four get a legend entry)."""
    for j, (name, members) in enumerate(_groups(points, "scenario").items()):
        front = _throughput_front(members, x_field, x_direction)
        ax.plot(
            [r[x_field] for r in front],
            [r[THROUGHPUT] for r in front],
            color="black",
            linestyle="--",
            linewidth=1.2,
            label=f"overall frontier {name}" if j < 4 else None,
        )


def _annotate_accuracy(ax: Any, points: Sequence[Mapping[str, Any]], x_field: str) -> None:
    """Evaluated points carry their accuracy on the chart (red: under its threshold)."""
    for row in points:
        value = row.get("accuracy")
        if not is_finite_number(value):
            continue
        failed = row.get("accuracy_status") in ("below_threshold", "error")
        ax.annotate(
            f"acc {value:.3f}",
            (row[x_field], row[THROUGHPUT]),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=7,
            color="#b00020" if failed else "#1b5e20",
        )


def _frontier_plot(
    rows: Sequence[Mapping[str, Any]],
    path: Path,
    *,
    x_field: str,
    x_label: str,
    x_direction: str,
    title: str,
) -> Path | None:
    points = _ok(rows, x_field, THROUGHPUT)
    if not points:
        return None
    fig, axes = _figure()
    ax = axes[0][0]
    groups = _groups(points)
    for i, (name, members) in enumerate(groups.items()):
        _plot_group(ax, name, members, COLORS[i % len(COLORS)], x_field, x_direction)
    if len(groups) > 1:
        _plot_overall_frontiers(ax, points, x_field, x_direction)
    _annotate_accuracy(ax, points, x_field)
    ax.set_xlabel(x_label)
    ax.set_ylabel("Throughput per GPU (tok/s/gpu, input + output)")
    ax.set_title(title + _assumed_note(points), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def throughput_vs_interactivity(rows: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """tok/s/gpu against tok/s/user, each group's frontier as a line (overall dashed)."""
    return _frontier_plot(
        rows,
        path,
        x_field=INTERACTIVITY,
        x_label="Interactivity (tok/s/user, 1000 / median TPOT)",
        x_direction="max",
        title="Throughput per GPU vs interactivity (lines: Pareto frontier)",
    )


def throughput_vs_latency(rows: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """tok/s/gpu against median end-to-end latency (lower is better), with frontiers."""
    return _frontier_plot(
        rows,
        path,
        x_field=LATENCY,
        x_label="Median end-to-end latency (ms)",
        x_direction="min",
        title="Throughput per GPU vs median E2E latency (lines: Pareto frontier)",
    )


def latency_vs_concurrency(rows: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """TTFT (p50, p99) and TPOT (p50, p99) against concurrency, one line per configuration."""
    # closed loop only: an open-loop point's load is a request rate, not a concurrency
    points = [r for r in _ok(rows, "median_ttft_ms") if r.get("concurrency") is not None]
    if not points:
        return None
    fig, axes = _figure(1, 2, (12.0, 5.0))
    panels = (
        (axes[0][0], "ttft", "TTFT (ms)"),
        (axes[0][1], "tpot", "TPOT (ms)"),
    )
    series = _groups(points, "series")
    for ax, metric, label in panels:
        for i, (name, members) in enumerate(series.items()):
            members = sorted(members, key=lambda r: r["concurrency"])
            color = COLORS[i % len(COLORS)]
            xs = [r["concurrency"] for r in members]
            for stat, style in (("median", "-"), ("p99", ":")):
                ys = [r.get(f"{stat}_{metric}_ms") for r in members]
                pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if is_finite_number(y)]
                if pairs:
                    ax.plot(
                        [p[0] for p in pairs],
                        [p[1] for p in pairs],
                        linestyle=style,
                        marker="o",
                        markersize=4,
                        color=color,
                        label=f"{name} {'p50' if stat == 'median' else stat}",
                    )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("Concurrency (requests in flight)")
        ax.set_ylabel(label)
        ax.set_title(f"{label.split()[0]} vs concurrency (solid p50, dotted p99)", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0][0].legend(fontsize=6, loc="best")
    return _save(fig, path)


def cost_vs_interactivity(rows: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """$ per million tokens (total; output dashed) against interactivity, per group."""
    points = _ok(rows, INTERACTIVITY, "cost_per_mtok_total")
    if not points:
        return None
    fig, axes = _figure()
    ax = axes[0][0]
    for i, (name, members) in enumerate(_groups(points).items()):
        members = sorted(members, key=lambda r: r[INTERACTIVITY])
        color = COLORS[i % len(COLORS)]
        ax.plot(
            [r[INTERACTIVITY] for r in members],
            [r["cost_per_mtok_total"] for r in members],
            marker="o",
            color=color,
            label=f"{name} (total)",
        )
        out = [r for r in members if is_finite_number(r.get("cost_per_mtok_output"))]
        if out:
            ax.plot(
                [r[INTERACTIVITY] for r in out],
                [r["cost_per_mtok_output"] for r in out],
                marker="x",
                linestyle="--",
                color=color,
                label=f"{name} (output)",
            )
        _label_points(ax, members, INTERACTIVITY, "cost_per_mtok_total")
    values = [r["cost_per_mtok_total"] for r in points] + [
        r["cost_per_mtok_output"] for r in points if is_finite_number(r.get("cost_per_mtok_output"))
    ]
    if min(values) > 0 and max(values) / min(values) > 20:
        ax.set_yscale("log")
    sources = sorted({str(r.get("price_source")) for r in points})
    ax.set_xlabel("Interactivity (tok/s/user)")
    ax.set_ylabel("$ per million tokens")
    ax.set_title(
        "Cost per million tokens vs interactivity (price: "
        + "; ".join(sources)
        + ")"
        + _assumed_note(points),
        fontsize=9,
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


# -- telemetry timelines ---------------------------------------------------------------------
def timeline_series(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Telemetry sidecar rows -> {metric: [(t_s, value)]} for the metrics a timeline shows:
    ``gpu.<i>.power_w``, ``engine.kv_cache_usage``, ``engine.requests_running``/``waiting``."""
    out: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        t = row.get("t_s")
        if not is_finite_number(t):
            continue
        for key, value in row.items():
            if not is_finite_number(value):
                continue
            if (key.startswith("gpu.") and key.endswith(".power_w")) or key in (
                "engine.kv_cache_usage",
                "engine.requests_running",
                "engine.requests_waiting",
            ):
                out.setdefault(key, []).append((float(t), float(value)))
    for values in out.values():
        values.sort()
    return out


def has_timeline(series: Mapping[str, Sequence[tuple[float, float]]]) -> bool:
    return any(k.endswith(".power_w") or k == "engine.kv_cache_usage" for k in series)


def telemetry_timeline(
    series: Mapping[str, Sequence[tuple[float, float]]],
    path: Path,
    *,
    title: str,
    window_s: float | None = None,
) -> Path | None:
    """GPU power (per GPU and summed), KV-cache use and requests over time, one panel each.

    Time 0 is the start of the measured window; the window is shaded.
    """
    power = {k: v for k, v in series.items() if k.endswith(".power_w")}
    kv = series.get("engine.kv_cache_usage")
    reqs = {
        k: series[k] for k in ("engine.requests_running", "engine.requests_waiting") if k in series
    }
    # each panel's data has its own shape (series by key, one series, series by key)
    shown = (("power", power), ("kv", kv), ("reqs", reqs))
    panels: list[tuple[str, Any]] = [p for p in shown if p[1]]
    if not power and not kv:
        return None
    fig, axes = _figure(len(panels), 1, (9.0, 2.4 * len(panels) + 0.6))
    for (kind, data), ax in zip(panels, [a[0] for a in axes], strict=True):
        if kind == "power":
            for key, values in sorted(data.items()):
                ax.plot([t for t, _ in values], [v for _, v in values], linewidth=1, label=key)
            if len(data) > 1:
                total = _sum_aligned(data)
                if total:
                    ax.plot(
                        [t for t, _ in total],
                        [v for _, v in total],
                        color="black",
                        linewidth=1.6,
                        label="sum",
                    )
            ax.set_ylabel("GPU power (W)")
            ax.legend(fontsize=6, loc="upper right", ncol=2)
        elif kind == "kv":
            ax.plot([t for t, _ in data], [100 * v for _, v in data], color="#9467bd")
            ax.set_ylabel("KV cache used (%)")
            ax.set_title(GAUGE_NOTE, fontsize=7, loc="left")
            ax.set_ylim(bottom=0)
        else:
            for key, values in data.items():
                ax.step(
                    [t for t, _ in values],
                    [v for _, v in values],
                    where="post",
                    label=key.split(".", 1)[1],
                )
            ax.set_ylabel("requests")
            ax.set_title(GAUGE_NOTE, fontsize=7, loc="left")
            ax.legend(fontsize=7, loc="upper right")
        if window_s and window_s > 0:
            ax.axvspan(0, window_s, color="#2ca02c", alpha=0.08)
        ax.grid(True, alpha=0.3)
    axes[-1][0].set_xlabel("time since the measured window started (s); shaded: measured window")
    axes[0][0].set_title(title, fontsize=9)
    return _save(fig, path)


def _sum_aligned(power: Mapping[str, Sequence[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Summed power where every GPU has a reading at the same instant (one sampler pass)."""
    by_t: dict[float, list[float]] = {}
    for values in power.values():
        for t, v in values:
            by_t.setdefault(t, []).append(v)
    return [(t, sum(vs)) for t, vs in sorted(by_t.items()) if len(vs) == len(power)]
