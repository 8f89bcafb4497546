"""Measuring one load point against one server: the plan every point of a server shares,
the requests, the drive, the result assembled and written (the core the entries share)."""
