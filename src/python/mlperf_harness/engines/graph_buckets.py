"""The slot counts a decode step's CUDA graph is captured for, shared by the torch decoder engines
(GPT-J, Llama 2): all slots, then halvings down to SMALLEST_GRAPH, so that a draining batch stops
paying for its empty slots' GEMM rows while a handful of graphs cover every count."""

from __future__ import annotations

SMALLEST_GRAPH = 8  # slots: below it the step's cost is the weights' read, whatever the count


def graph_slot_counts(slots: int) -> list[int]:
    """The slot counts a decode graph is captured for: all, then halvings down to SMALLEST_GRAPH."""
    counts = [slots]
    while counts[-1] // 2 >= SMALLEST_GRAPH:
        counts.append(counts[-1] // 2)
    return sorted(counts)
