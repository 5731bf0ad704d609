"""The ways of doing DLRM-v2's cross layer update timed side by side (torch_raw --cross_ab N): the
runners whole with `--cross torch` and `--cross kernel` (raw_grid.cross_rates), and one cross
layer's update alone on a real batch's pairs, with the runner's real-size weights: torch's addmm
then addcmul (the default) and our Triton kernel in each launch form of cross_update.CANDIDATES,
each timed over N updates, rounds alternating (the best round kept), with its largest difference
from the float32 update of the same fp16 operands (the kernel skips torch's fp16 rounding of
W y + b, so it should be the closer). A form that fails to compile is listed as failed.

Imports torch (and triton, through the kernel): GPU hosts, and the CPU tests under the
interpreter."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mlperf_harness.benchmarks.dlrm_v2 import cross_update
from mlperf_harness.benchmarks.dlrm_v2.pair_store import PairGroupStore
from mlperf_harness.benchmarks.dlrm_v2.pooling_ab import method_lines
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.errors import HarnessError, first_line
from mlperf_harness.harness.sample_store import SampleStore

if TYPE_CHECKING:  # the runner imports LoadGen; the comparison itself runs without it (CPU tests)
    from mlperf_harness.benchmarks.dlrm_v2.torch_runner import DlrmTorchRunner

ROUNDS = 3
SEED = 0
# The operands' scales: x and x0 as the pooled rows and the bottom MLP's outputs run (about unit),
# y = V x summed over the layer's 3,456 inputs.
X_SCALE, Y_SCALE = 1.0, 4.0
Clock = Callable[[Callable[[], Any], int], float]  # (update, repeats) -> ms an update


def compare_runner_updates(
    runner: DlrmTorchRunner, store: SampleStore, pick: Sequence[int], repeats: int
) -> dict[str, Any]:
    """compare_updates on the runner's GPU with its model's first cross layer in fp16, for as many
    pairs as the batch of samples `pick` holds, timed by CUDA events."""
    from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers

    if not isinstance(store, PairGroupStore):
        raise HarnessError("DLRM-v2's runners read a PairGroupStore")
    source, device = runner.source, runner.device
    layers = DenseLayers(source.dense, source.widths, device, "fp16", "dlrm-v2 cross_ab")
    w = layers.cross[0][1]
    pairs = int(store.pair_counts(np.asarray(pick, dtype=np.int64)).sum())
    return compare_updates(w.weight, w.bias, pairs, repeats, cuda_ms)


def compare_updates(
    weight: Any, bias: Any, pairs: int, repeats: int, clock: Clock, rounds: int = ROUNDS
) -> dict[str, Any]:
    """{pairs, width, rank, repeats, methods: [{method, ms, gb_per_s, max_abs_diff}], failed}:
    the update of `pairs` rows by one layer's W (`weight` fp16 [width, rank]) and `bias` [width],
    on their device, in each way; gb_per_s counts what the fused form must move (y, x, x0 read,
    x' written, W once)."""
    torch = import_torch()

    width, rank = weight.shape
    device = weight.device
    generator = torch.Generator(device=device).manual_seed(SEED)

    def draw(rows: int, columns: int, scale: float) -> Any:
        values = torch.randn(rows, columns, generator=generator, device=device) * scale
        return values.to(torch.float16)

    y, x, x0 = draw(pairs, rank, Y_SCALE), draw(pairs, width, X_SCALE), draw(pairs, width, X_SCALE)
    methods: dict[str, Callable[[], Any]] = {
        "torch addmm + addcmul": lambda: cross_update.torch_update(y, weight, bias, x, x0)
    }
    for config in cross_update.CANDIDATES:
        methods[f"kernel, {config.label()}"] = _kernel(y, weight, bias, x, x0, config)
    on_gpu = device.type == "cuda"
    with torch.cuda.device(device) if on_gpu else contextlib.nullcontext():
        reference = cross_update.cross_float32_reference(y, weight, bias, x, x0)
        differences: dict[str, float] = {}
        failed: dict[str, str] = {}
        for name, way in methods.items():
            try:  # the first call compiles: a form this GPU cannot run is reported, not fatal
                differences[name] = float((way().float() - reference).abs().max())
            except Exception as error:  # Triton's compile and launch errors have no common type
                failed[name] = first_line(error)
                if on_gpu:
                    torch.cuda.synchronize()
        timed = {name: way for name, way in methods.items() if name not in failed}
        best = {name: float("inf") for name in timed}
        for _ in range(rounds):
            for name, way in timed.items():
                best[name] = min(best[name], clock(way, repeats))
    moved = 2 * (pairs * rank + 3 * pairs * width + width * rank)
    return {
        "pairs": pairs,
        "width": width,
        "rank": rank,
        "repeats": repeats,
        "reference_max_abs": float(reference.abs().max()),
        "methods": [
            {
                "method": name,
                "ms": best[name],
                "gb_per_s": moved / best[name] / 1e6,
                "max_abs_diff": differences[name],
            }
            for name in timed
        ],
        "failed": failed,
    }


def _kernel(
    y: Any, weight: Any, bias: Any, x: Any, x0: Any, config: cross_update.CrossConfig
) -> Callable[[], Any]:
    def way() -> Any:
        return cross_update.fused_update(y, weight, bias, x, x0, config)

    return way


def cuda_ms(way: Callable[[], Any], repeats: int) -> float:
    torch = import_torch()

    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(repeats):
        way()
    end.record()
    end.synchronize()
    return float(begin.elapsed_time(end)) / repeats


def wall_ms(way: Callable[[], Any], repeats: int) -> float:
    """The CPU's clock (the interpreted tests): what the table's shape needs, not a speed."""
    began = time.perf_counter()
    for _ in range(repeats):
        way()
    return (time.perf_counter() - began) * 1e3 / repeats


def format_updates(record: dict[str, Any]) -> str:
    lines = [
        f"one cross layer's update, {record['pairs']:,} pairs, width {record['width']}, rank "
        f"{record['rank']}, {record['repeats']} updates (values up to "
        f"{record['reference_max_abs']:.1f}): ms an update, GB/s of y, x, x0, x' and W, largest "
        "difference from the float32 update"
    ]
    return "\n".join(lines + method_lines(record))
