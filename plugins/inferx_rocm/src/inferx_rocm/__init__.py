"""InferX plugin for AMD Instinct GPUs (ROCm): detection, telemetry, fixes."""

__version__ = "0.1.0"
