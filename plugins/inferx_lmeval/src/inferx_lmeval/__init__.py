"""InferX plugin: accuracy (GSM8K, GPQA, any lm-eval task) measured on the benchmarked server.

Registers the ``lm-eval`` evaluator (hook ``inferx_evaluators``). lm-eval's
``local-completions`` / ``local-chat-completions`` models talk to the server;
the harness runs in a subprocess with its own interpreter, so none of its
dependencies are imported into InferX.
"""

__version__ = "0.1.0"
