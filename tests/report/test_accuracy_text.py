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
