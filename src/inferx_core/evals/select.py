"""Which load points of a server to evaluate at: ``at: [max, median]`` or load levels."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["chosen_levels"]


def chosen_levels(at: Sequence[str | float], levels: Iterable[float]) -> list[float]:
    """The load levels ``at`` names among ``levels``, sorted, each once.

    ``max``/``min`` are the highest/lowest level; ``median`` is the middle one
    (the lower middle of an even count, a level that was really run). A number
    is taken when it is one of the levels and ignored otherwise.
    """
    ordered = sorted(set(levels))
    if not ordered:
        return []
    picked: set[float] = set()
    for choice in at:
        if choice == "max":
            picked.add(ordered[-1])
        elif choice == "min":
            picked.add(ordered[0])
        elif choice == "median":
            picked.add(ordered[(len(ordered) - 1) // 2])
        elif not isinstance(choice, str) and float(choice) in ordered:
            picked.add(float(choice))
    return sorted(picked)
