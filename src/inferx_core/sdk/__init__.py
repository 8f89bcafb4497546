"""The plugin contract: hook specs, the plugin manager, registries and contract types.

Plugin authors import from ``inferx_core`` itself; these modules are the
implementation behind that namespace.
"""
