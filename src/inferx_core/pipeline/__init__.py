"""Orchestration: one load point, one server session, a whole run."""
