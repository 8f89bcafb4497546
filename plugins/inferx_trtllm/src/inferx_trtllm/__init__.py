"""InferX plugin for TensorRT-LLM's trtllm-serve."""

__version__ = "0.1.0"
