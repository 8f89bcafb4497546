"""InferX plugin for vLLM: launch spec, readiness probes and /metrics names."""

__version__ = "0.1.0"
