"""``inferx compare``'s accuracy table prints labels and tasks as they are: square brackets
in them are not rich markup (a "[/x]" in a point's name failed the whole comparison)."""

from __future__ import annotations

import io

from rich.console import Console

from inferx_core.report.accuracy import print_accuracy_comparison


def test_brackets_in_labels_and_tasks_print_as_written() -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    row = {
        "label": "[/nope] [bold]pt",
        "task": "[red]gsm8k",
        "a": 0.5,
        "b": 0.6,
        "diff": 0.1,
        "verdict": "better",
        "basis": "z",
    }
    print_accuracy_comparison([row], console)
    out = console.file.getvalue()
    assert "[/nope] [bold]pt" in out and "[red]gsm8k" in out


def test_failure_reasons_and_point_ids_print_as_written() -> None:
    """A server's error text in a failure reason is data, never rich markup (``[/x]`` used
    to raise MarkupError, ``[red]`` to restyle)."""
    from result_factory import make_result

    from inferx_core.report.console import print_summary
    from inferx_core.results.read import parse_result

    data = make_result("p[/x]-c1", status="failed", tput_per_gpu=None, median_intvty=None)
    data["failure_reason"] = "HTTP 500: [/x] [bold red]boom[/]"
    buffer = io.StringIO()
    print_summary([parse_result(data)], Console(file=buffer, width=200))
    out = buffer.getvalue()
    assert "p[/x]-c1: HTTP 500: [/x] [bold red]boom[/]" in out
