"""What a point's row holds, and the tables drawn from rows: no reading, no analysis.

Rows in, text out, so that whatever builds rows (:mod:`inferx_core.analysis`) and
whatever composes a report of them (:mod:`inferx_core.report`, the CLI) both stand
above it:

- :mod:`~inferx_core.tables.columns`: every column of a point's row, declared once,
  in CSV order, each with where its value comes from;
- :mod:`~inferx_core.tables.points`: ``points.csv`` and the summary table (terminal,
  and the cells the HTML page shows);
- :mod:`~inferx_core.tables.buyer`: the buyer's table (capacity at SLO), as text and
  HTML, from the rows :mod:`inferx_core.analysis.buyer` ranks.
"""
