"""``inferx docs [TOPIC[#SECTION]]``: the documentation shipped inside the package.

The wheel carries the checkout's ``docs/`` as ``inferx_core/_docs`` (hatch
``force-include`` in pyproject.toml), so an installed InferX never points at
a file only a checkout has. An editable install reads the checkout's
``docs/`` itself. Messages elsewhere refer to a page as ``inferx docs TOPIC``
(:func:`doc_reference` turns a ``docs/page.md#anchor`` into that).

Registered by ``inferx_core.cli.app`` through :func:`register_command`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from inferx_core.errors import UserFacingError

ONLINE_DOCS = "https://github.com/inferx-project/inferx/tree/main/docs"
_PACKAGE = Path(__file__).resolve().parents[1]
_REPO_REF = re.compile(r"^docs/([\w.-]+)\.md(?:#([\w-]+))?$")


def docs_dir() -> Path:
    """The shipped pages (a wheel), else the checkout's docs/ (an editable install)."""
    for candidate in (_PACKAGE / "_docs", _PACKAGE.parents[1] / "docs"):
        if (candidate / "hooks.md").is_file():
            return candidate
    raise UserFacingError(f"this InferX install has no documentation; online: {ONLINE_DOCS}")


def topics() -> dict[str, Path]:
    """Topic name (the page's file stem) -> page."""
    return {page.stem: page for page in sorted(docs_dir().glob("*.md"))}


def doc_reference(reference: str) -> str:
    """``docs/fixes.md#x`` -> ``inferx docs fixes#x`` for InferX's own pages; else unchanged."""
    match = _REPO_REF.match(reference.strip())
    if match is None:
        return reference
    topic, anchor = match.groups()
    try:
        if topic not in topics():
            return reference  # another project's page (a third-party plugin's docs/)
    except UserFacingError:
        return f"{ONLINE_DOCS}/{topic}.md" + (f"#{anchor}" if anchor else "")
    return f"inferx docs {topic}" + (f"#{anchor}" if anchor else "")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, anchor) of each markdown heading, code fences skipped."""
    found, fenced = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^(#{1,6}) (.*)", line)
        if match:
            found.append((i, len(match.group(1)), _slug(match.group(2))))
    return found


def section(text: str, anchor: str) -> str:
    """The section under the heading whose anchor is ``anchor``, to the next one as deep."""
    lines = text.splitlines(keepends=True)
    headings = _headings(lines)
    for n, (start, level, slug) in enumerate(headings):
        if slug == anchor:
            end = next((i for i, lv, _ in headings[n + 1 :] if lv <= level), len(lines))
            return "".join(lines[start:end])
    raise UserFacingError(f"no section #{anchor} in this page")


def _title(page: Path) -> str:
    first = page.read_text(encoding="utf-8").split("\n", 1)[0]
    return first.lstrip("# ").strip()


def page_text(topic: str) -> str:
    """The page (or ``topic#section``: that section) as markdown."""
    name, _, anchor = topic.partition("#")
    pages = topics()
    page = pages.get(name.removesuffix(".md"))
    if page is None:
        raise UserFacingError(f"no documentation topic {name!r}; topics: {', '.join(pages)}")
    text = page.read_text(encoding="utf-8")
    return section(text, anchor) if anchor else text


def register_command(sub: Any) -> None:
    p = sub.add_parser(
        "docs",
        help="print the documentation shipped with InferX (no topic: list the topics)",
        description="Print a documentation page (markdown). TOPIC#SECTION prints one section, "
        f"e.g. `inferx docs fixes#nccl-sm100-jit-cache`. Online: {ONLINE_DOCS}",
    )
    p.add_argument("topic", nargs="?", help="a topic (e.g. hooks, metrics, writing-a-plugin)")
    p.set_defaults(handler=cmd_docs)


def cmd_docs(args: argparse.Namespace) -> int:
    if args.topic:
        sys.stdout.write(page_text(args.topic))
        return 0
    pages = topics()
    width = max(map(len, pages))
    for name, page in pages.items():
        sys.stdout.write(f"{name:<{width}}  {_title(page)}\n")
    sys.stdout.write(f"\n`inferx docs TOPIC` prints one; online: {ONLINE_DOCS}\n")
    return 0
