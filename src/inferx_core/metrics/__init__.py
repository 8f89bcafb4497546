"""Per-request records -> latency, throughput and goodput statistics."""
