"""Built-in fix catalogues (data: id, symptom, condition, change, reference).

:mod:`inferx_core.builtin.nvidia.fixes` is offered by the built-in NVML plugin
(``inferx_core.builtin.nvidia.plugin``) through ``inferx_container_fixes``. docs/fixes.md
describes every fix; ``inferx fixes`` lists them and shows which apply where.
"""
