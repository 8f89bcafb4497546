"""Configuration: run, sweep and bench models, the YAML loader, sweep expansion, point ids.

Inside the package, lower modules never import higher ones: ``base`` (the
strict model) <- ``axes`` (ranges, precisions) <- ``models`` (run, server,
bench) <- ``points`` (load points, server and point ids) <- ``sweep`` (the
matrix, its expansion and filters) <- ``loader``. ``parsing`` (strict, bounded
JSON and YAML) imports none of them; the loader and every reader of result,
import and platform files parse through it.
"""
