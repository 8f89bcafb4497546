"""Results in and out of the field's own formats (docs/interop.md).

- :mod:`.vllm_bench`: a point as vLLM ``bench serve --save-result`` writes it;
- :mod:`.inferencex`, :mod:`.metadata`: InferenceX's aggregate and power fields;
- :mod:`.tabular`: ``points.csv`` and Parquet tables for notebooks;
- :mod:`.importers`: vLLM and InferenceX files as InferX results;
- :mod:`.export`: the formats by name, for ``inferx export`` and ``--export``.
"""
