"""Orchestration, by entry: ``point`` measures one load point (the shared core), ``search``
drives a capacity search over points, ``bench`` is ``inferx bench`` and the public API over
it, ``server`` is one launched server's life (``inferx run``). Imports run one way:
``server | bench`` above ``search`` above ``point`` (pyproject's ``pipeline-layers``)."""
