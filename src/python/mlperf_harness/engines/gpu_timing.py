"""GPU time of a piece of work by CUDA events, for the device checks and benchmarks of the torch
engines. torch is passed in: CPU hosts import the package without it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def gpu_ms(torch: Any, run: Callable[[], Any], repeat: int) -> float:
    """The GPU time of one `run()` in ms, the mean of `repeat` after one unmeasured."""
    run()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        run()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) / repeat


def time_graph(torch: Any, stream: Any, graph: Any, replays: int) -> float:
    """Milliseconds per replay of a captured CUDA graph, replayed back to back on `stream` and
    timed with CUDA events (once untimed first: the first replay after others may page in memory).
    The engine alone, for a benchmark's torch_raw."""
    with torch.cuda.stream(stream):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        graph.replay()
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / replays


def captured_ms(torch: Any, run: Callable[[], Any], replays: int, calls: int = 1) -> float:
    """Milliseconds of one `run()`: three warm-up runs (which also compile a compiled `run`), then
    `calls` runs captured in one CUDA graph on a stream of their own and replayed `replays` times
    (time_graph). Several calls a graph keep a short kernel's launch from being most of its time."""
    stream = torch.cuda.Stream()
    with torch.no_grad(), torch.cuda.stream(stream):
        for _ in range(3):
            run()
        stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls):
                run()
    return time_graph(torch, stream, graph, replays) / calls
