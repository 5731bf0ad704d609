"""CUDA graphs captured the first time their shapes are met: the Llama engine's decode steps
(static_step.py) and lone prefills (static_prefill.py) each keep one per bucket.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any


def replay_or_capture(
    torch: Any,
    graphs: dict[Any, Any],
    key: Hashable,
    stream: Any,
    pool: Callable[[], Any],
    work: Callable[[], None],
) -> None:
    """Replay `graphs[key]`; where there is none yet, run `work` eagerly on `stream` (this call's
    work, and the capture's warm-up: a Triton kernel compiles there, before the capture), then
    capture it into `pool()` as `graphs[key]`."""
    graph = graphs.get(key)
    if graph is not None:
        graph.replay()
        return
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        work()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    # Captured on first use, in the serving loop's thread: with one engine a GPU in a process,
    # another GPU's loop runs beside this capture, and under the default "global" mode its
    # allocations and syncs would break the capture (two replicas on two H200s failed on their
    # first step); "thread_local" forbids them in this thread only, as this work needs.
    with torch.cuda.graph(graph, pool=pool(), stream=stream, capture_error_mode="thread_local"):
        work()
    graphs[key] = graph
