"""A TPU vendor's first InferX plugin, written against the public hooks only.

It shows every kind of hook a vendor usually needs: detection, an engine
with its launch spec and readiness, and a fix. Nothing in inferx-core knows
about it; installing this distribution is enough (see
docs/writing-a-plugin.md). It has the shape of every InferX plugin: a thin
:mod:`~inferx_example_plugin.hooks` (the entry point, only ``@hookimpl``
functions) over modules with one job each (:mod:`~inferx_example_plugin.tpu`,
:mod:`~inferx_example_plugin.launch`, :mod:`~inferx_example_plugin.fixes`).
"""
