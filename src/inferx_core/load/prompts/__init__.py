"""What is sent.

Datasets, prompt text of exact lengths, workloads, traces, sessions and the request
bodies.
"""
