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
