"""InferX plugin for llama.cpp: llama-server launch spec, readiness, /metrics, GGUF model."""

__version__ = "0.1.0"
