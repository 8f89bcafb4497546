"""Load generation: workloads, the streaming client and the request scheduler."""
