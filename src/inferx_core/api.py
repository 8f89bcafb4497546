"""InferX from Python: benchmark a running server, read, export and import results.

For code that embeds InferX (a notebook, a CI job, a service), not for
plugins (those import ``inferx_core``):

- ``run_bench(BenchConfig(...))`` measures an OpenAI-compatible server that
  is already running, one outcome per load point; ``await arun_bench(...)``
  inside an event loop (docs/testing.md, examples/embed_in_pipeline.py).
- ``read_result(path)`` / ``parse_result(data)``: a result file as its typed
  model (every schema InferX wrote, schema 1 included).
- ``export_paths`` / ``export_results`` with ``ExportOptions``: vLLM bench
  serve, InferenceX, CSV and Parquet; ``import_file``: their files back as
  InferX results (docs/interop.md).

Each name is declared once, by the import below, and imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferx_core import _lazy

if TYPE_CHECKING:  # the public names: each imported on first use (_lazy.attach)
    from inferx_core.config.models import SLO as SLO
    from inferx_core.config.models import BenchConfig as BenchConfig
    from inferx_core.config.models import LoadProfile as LoadProfile
    from inferx_core.config.models import Workload as Workload
    from inferx_core.interop.export import ExportOptions as ExportOptions
    from inferx_core.interop.export import export_paths as export_paths
    from inferx_core.interop.export import export_results as export_results
    from inferx_core.interop.importers import import_file as import_file
    from inferx_core.pipeline.bench.api import arun_bench as arun_bench
    from inferx_core.pipeline.bench.api import run_bench as run_bench
    from inferx_core.results.files import read_result as read_result
    from inferx_core.results.model import parse_result as parse_result

__all__, __getattr__, __dir__ = _lazy.attach(globals())
