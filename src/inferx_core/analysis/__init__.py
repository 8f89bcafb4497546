"""Analysis of result sets: loading and merging, Pareto frontiers, cost and power, A/B.

Pure functions over result dicts (``load`` reads files). Nothing here imports
matplotlib; plots live in :mod:`inferx_core.report`.

- :mod:`~inferx_core.results.read`: read results from folders, dedupe, conflicts.
- :mod:`~inferx_core.analysis.pareto`: frontiers and their definition.
- :mod:`~inferx_core.analysis.cost`: $/Mtok and tokens/s per MW.
- :mod:`~inferx_core.analysis.points`: one row per result, with frontier flags.
- :mod:`~inferx_core.analysis.compare`: A/B ratios with a verdict, interpolation.
"""
