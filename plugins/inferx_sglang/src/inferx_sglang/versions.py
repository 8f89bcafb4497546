"""Flag forms by the SGLang version that will run (issue 40 item 3).

The version comes from the platform's ``software["sglang"]``: for a docker launch
InferX reads it from the image before the first launch (docs/containers.md);
for a process launch it is whatever the platform reports, usually nothing, and
then the form of :data:`~inferx_sglang.launch.TARGET_VERSION` is used (the release
whose parser ``make test`` runs).

DP attention, N attention groups inside the TP group:

- SGLang >= 0.5.22: ``--attn-dp-size N``. 0.5.22's and 0.5.23's own parsers
  take it and call the pair below deprecated (checked in
  plugins/inferx_sglang/tests/test_sglang_version_ranges.py with both parsers).
- 0.4.0 <= SGLang < 0.5.22: ``--dp-size N --enable-dp-attention``, the form the
  recipes that pin older images use (DP attention came in 0.4.0). Checked with
  0.5.4's own parser in a venv of its own (venvs/sglang-0.5.4 in InferX's cache: its server_args
  imports torchvision, which needs the torch it was built for), which takes this
  form and refuses ``--attn-dp-size``; its argparse parser only, since building
  its ServerArgs asks for a GPU.
- Older, or a version InferX cannot read: the oldest known form, with a warning
  that names the known ranges (never a silent guess).
"""

from __future__ import annotations

import re

#: (first version, last version exclusive or None, the form's name) of DP attention.
DP_ATTENTION_RANGES: tuple[tuple[tuple[int, ...], tuple[int, ...] | None, str], ...] = (
    ((0, 5, 22), None, "--attn-dp-size N"),
    ((0, 4, 0), (0, 5, 22), "--dp-size N --enable-dp-attention"),
)


def parse(version: str) -> tuple[int, ...] | None:
    """``0.5.23`` / ``v0.5.15.post1`` / ``0.5.23+cu129`` -> (0, 5, 23); None when unreadable."""
    hit = re.match(r"v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(p) for p in hit.group(1).split(".")) if hit else None


def _ranges_text() -> str:
    def one(low: tuple[int, ...], high: tuple[int, ...] | None, form: str) -> str:
        dotted = ".".join(map(str, low))
        upper = f" < {'.'.join(map(str, high))}" if high else ""
        return f"{dotted} <= sglang{upper}: {form}"

    return "; ".join(one(*r) for r in DP_ATTENTION_RANGES)


def dp_attention_argv(groups: int, version: str | None) -> tuple[list[str], str | None]:
    """DP attention's flags for ``groups`` attention groups on SGLang ``version`` (None:
    the target release's form), and a warning when the version is outside every range."""
    newest = ["--attn-dp-size", str(groups)]
    oldest = ["--dp-size", str(groups), "--enable-dp-attention"]
    if version is None:
        return newest, None
    parsed = parse(version)
    for low, high, form in DP_ATTENTION_RANGES:
        if parsed is not None and parsed >= low and (high is None or parsed < high):
            return (newest if form.startswith("--attn") else oldest), None
    warning = (
        f"SGLang {version} is outside every known range of DP attention's flags "
        f"({_ranges_text()}); using {' '.join(oldest)}"
    )
    return oldest, warning
