"""vLLM's speculative-decoding counters as the scripted server's ``/metrics`` publishes them.

Every content chunk of a stream with ``spec_tokens`` set is one verification
step: one draft of ``spec_tokens`` tokens, of which the chunk's tokens minus
the bonus token were accepted, at the first positions. The counters move with
the load, so a window over part of a run sees part of them; the mean
acceptance length over any window is the chunks' tokens per chunk.
"""

from __future__ import annotations

import threading

__all__ = ["SpecCounters"]


class SpecCounters:
    """``vllm:spec_decode_*`` counters, incremented by streams, rendered for ``/metrics``."""

    def __init__(self, spec_tokens: int = 0) -> None:
        self._lock = threading.Lock()
        self.drafts = 0
        self.draft_tokens = 0
        self.accepted = 0
        # vLLM publishes every position's counter from its start, at 0: a series that
        # appeared only with its first accepted token would miss what came before it.
        self.per_position: list[int] = [0] * spec_tokens

    def step(self, spec_tokens: int, chunk_tokens: int) -> None:
        accepted = max(min(chunk_tokens - 1, spec_tokens), 0)
        with self._lock:
            self.drafts += 1
            self.draft_tokens += spec_tokens
            self.accepted += accepted
            if len(self.per_position) < spec_tokens:
                self.per_position += [0] * (spec_tokens - len(self.per_position))
            for pos in range(accepted):
                self.per_position[pos] += 1

    def text(self) -> str:
        """The Prometheus text vLLM writes for these counters (one engine; prometheus_client's
        exposition: ``# TYPE name_total counter`` then the ``name_total`` samples)."""
        with self._lock:
            counters = [
                ("vllm:spec_decode_num_drafts", self.drafts),
                ("vllm:spec_decode_num_draft_tokens", self.draft_tokens),
                ("vllm:spec_decode_num_accepted_tokens", self.accepted),
            ]
            positions = list(self.per_position)
        lines = []
        for name, value in counters:
            lines += [f"# TYPE {name}_total counter", f'{name}_total{{engine="0"}} {float(value)}']
        name = "vllm:spec_decode_num_accepted_tokens_per_pos"
        lines.append(f"# TYPE {name}_total counter")
        for pos, value in enumerate(positions):
            lines.append(f'{name}_total{{engine="0",position="{pos}"}} {float(value)}')
        return "\n".join(lines) + "\n"
