"""Accuracy beside throughput: run evaluator plugins against a server, check thresholds.

``model`` holds the accuracy section of a point result; ``registry`` finds
evaluators by name (hook ``inferx_evaluators``); ``run`` runs tasks and
checks each headline figure against its threshold; ``select`` picks the load
points of a sweep to evaluate at (``at: [max, median]``).
"""
