"""What is sent.

Datasets, prompt text of exact lengths, prompt sets (a workload built), traces,
sessions and the request bodies.
"""
