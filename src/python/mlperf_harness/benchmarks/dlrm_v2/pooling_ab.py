"""The ways of pooling DLRM-v2's lookups timed side by side on one runner's GPU, on its real tables
and real batches (torch_raw --pooling_ab N): torch's embedding_bag over the fp16 table (the
runner's default), our Triton kernel over the same table in each launch form of
pooled_lookup.CANDIDATES, and the kernel over the tables as int8 rows (quantized here from the fp16
ones, a second copy in GPU memory). Each is timed over the same N batches, rounds alternating (the
best round kept: the GPU's clock drifts between rounds), with how far its sums are from
embedding_bag's: the fp16 kernel should differ by fp16 rounding of a different summation order
at most, the int8 one by int8 rounding.

Imports torch and triton: GPU hosts only."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mlperf_harness.benchmarks.dlrm_v2 import pooled_lookup
from mlperf_harness.benchmarks.dlrm_v2.gpu_tables import StackedTables, int8_table
from mlperf_harness.benchmarks.dlrm_v2.int8_rows import row_bytes
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.errors import HarnessError, first_line
from mlperf_harness.harness.sample_store import SampleStore

if TYPE_CHECKING:  # the runner imports LoadGen; the comparison itself runs without it (CPU tests)
    from mlperf_harness.benchmarks.dlrm_v2.torch_runner import DlrmTorchRunner

ROUNDS = 3
Clock = Callable[[Callable[[Any], Any], Sequence[Any]], float]  # (way, batches) -> ms a batch


def compare_pooling(
    runner: DlrmTorchRunner, store: SampleStore, picks: Sequence[Sequence[int]]
) -> dict[str, Any]:
    """compare_ways over batches of the runner's loaded samples (`picks`: each batch's samples),
    on its GPU, timed by CUDA events."""
    batch_sparse = [runner.batch_indices(store, pick) for pick in picks]
    return compare_ways(runner.tables, batch_sparse, cuda_ms_per_batch)


def compare_ways(
    tables: StackedTables, batch_sparse: Sequence[Any], clock: Clock, rounds: int = ROUNDS
) -> dict[str, Any]:
    """{batches, pairs_per_batch, reference_max_abs, methods: [{method, ms, gb_per_s,
    max_abs_diff}], failed: {method: why}}: each way of pooling timed over the batches' indices
    (int32 [pairs, 214] each, on the tables' device), its best of `rounds` rounds, and its largest
    difference from embedding_bag's sums over the first two batches."""
    torch = import_torch()

    if tables.sharded or tables.int8:
        raise HarnessError(
            "--pooling_ab times the fp16 tables on one GPU: run it replicated, with "
            "--embedding torch or kernel"
        )
    device, _, _, table = tables.shards[0]
    layout, width = tables.layout, tables.width
    bases, bags = tables.constants(device)
    offsets = layout.bag_offsets(max(s.shape[0] for s in batch_sparse), device)
    int8_rows = int8_table(table, width)

    def torch_way(sparse: Any) -> Any:
        return pooled_lookup.embedding_bag_rows(sparse, bases, table, layout, offsets)

    methods: dict[str, tuple[Callable[[Any], Any], int]] = {
        "torch embedding_bag, fp16": (torch_way, width * 2)
    }
    for config in pooled_lookup.CANDIDATES:
        methods[f"kernel fp16, {config.label()}"] = (
            _kernel(bases, bags, table, layout, width, False, config),
            width * 2,
        )
    for config in pooled_lookup.INT8_CANDIDATES:
        methods[f"kernel int8, {config.label()}"] = (
            _kernel(bases, bags, int8_rows, layout, width, True, config),
            row_bytes(width),
        )
    on_gpu = device.type == "cuda"
    with torch.cuda.device(device) if on_gpu else contextlib.nullcontext():
        reference = [torch_way(sparse).float() for sparse in batch_sparse[:2]]
        differences: dict[str, float] = {}
        failed: dict[str, str] = {}
        for name, (way, _) in methods.items():
            try:  # the first call compiles: a form this GPU cannot run is reported, not fatal
                differences[name] = max(
                    float((way(sparse).float() - want).abs().max())
                    for sparse, want in zip(batch_sparse[:2], reference, strict=True)
                )
            except Exception as error:  # Triton's compile and launch errors have no common type
                failed[name] = first_line(error)
                if on_gpu:
                    torch.cuda.synchronize()
        timed = {name: method for name, method in methods.items() if name not in failed}
        best = {name: float("inf") for name in timed}
        for _ in range(rounds):
            for name, (way, _) in timed.items():
                best[name] = min(best[name], clock(way, batch_sparse))
    pairs = sum(s.shape[0] for s in batch_sparse) / len(batch_sparse)
    rows = pairs * layout.columns
    return {
        "batches": len(batch_sparse),
        "pairs_per_batch": pairs,
        "reference_max_abs": max(float(r.abs().max()) for r in reference),
        "methods": [
            {
                "method": name,
                "ms": best[name],
                "gb_per_s": rows * row_size / best[name] / 1e6,
                "max_abs_diff": differences[name],
            }
            for name, (_, row_size) in timed.items()
        ],
        "failed": failed,
    }


def _kernel(
    bases: Any,
    bags: Any,
    table: Any,
    layout: pooled_lookup.BagLayout,
    width: int,
    int8: bool,
    config: pooled_lookup.KernelConfig,
) -> Callable[[Any], Any]:
    def way(sparse: Any) -> Any:
        return pooled_lookup.pooled_rows(
            sparse, bases, bags, table, layout, width, int8=int8, config=config
        )

    return way


def cuda_ms_per_batch(way: Callable[[Any], Any], batch_sparse: Sequence[Any]) -> float:
    torch = import_torch()

    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for sparse in batch_sparse:
        way(sparse)
    end.record()
    end.synchronize()
    return float(begin.elapsed_time(end)) / len(batch_sparse)


def format_pooling(record: dict[str, Any]) -> str:
    lines = [
        f"pooled lookups, {record['batches']} batches of {record['pairs_per_batch']:,.0f} pairs "
        f"(sums up to {record['reference_max_abs']:.2f}): ms a batch, GB/s of rows read, largest "
        "difference from embedding_bag"
    ]
    return "\n".join(lines + method_lines(record))


def method_lines(record: dict[str, Any]) -> list[str]:
    """An A/B record's rows (pooling_ab's, cross_ab's): each method's ms, GB/s and largest
    difference from the reference, then the methods that failed."""
    lines = [
        f"  {row['ms']:8.3f} ms  {row['gb_per_s']:7.1f} GB/s  diff {row['max_abs_diff']:.4g}  "
        f"{row['method']}"
        for row in record["methods"]
    ]
    return lines + [f"  failed: {name}: {why}" for name, why in record["failed"].items()]
