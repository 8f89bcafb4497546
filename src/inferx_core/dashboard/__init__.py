"""The interactive dashboard: one self-contained HTML page of Pareto charts, filters, cost."""
