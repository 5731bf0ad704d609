"""Run under TRITON_INTERPRET=1 by test_pooling_kernel_interpreted.py (a process of its own: Triton
reads that variable when the kernel is defined): DLRM-v2's pooled-lookup kernel on the CPU, through
the launch code the GPU runner uses, against torch's embedding_bag (what the runner does today).
Prints one line per check and exits non-zero when one fails.

Two kinds of table values: "grid" values (multiples of 1/8 up to 2: every sum of up to a bag's 100
rows is exact even in fp16, so any summation order, and shards' partial sums added, give the same
bits: the kernel must equal embedding_bag bit for bit) and normal draws (orders differ: the kernel
must be within one fp16 rounding of embedding_bag)."""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
import torch.nn.functional as F  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.benchmarks.dlrm_v2 import gpu_tables, int8_rows, pooled_lookup, pooling_ab
from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
from mlperf_harness.benchmarks.dlrm_v2.gpu_model import GpuModelSource
from mlperf_harness.benchmarks.dlrm_v2.gpu_tables import StackedTables
from mlperf_harness.benchmarks.dlrm_v2.pooled_lookup import BagLayout, KernelConfig
from mlperf_harness.benchmarks.dlrm_v2.topology import MULTI_HOT_SIZES, REAL, table_offsets

CPU = torch.device("cpu")
# Rows of each of the 26 tables here: small, uneven, one of 1 row (every index its last row).
SMALL_ROWS = tuple(1 + (7 * t) % 23 for t in range(26))


def grid_table(rows: int, width: int) -> torch.Tensor:
    return (torch.randint(-16, 17, (rows, width)) / 8.0).half()


def normal_table(rows: int, width: int) -> torch.Tensor:
    return torch.randn(rows, width).half()


def indices(pairs: int, table_rows: tuple[int, ...], layout: BagLayout) -> torch.Tensor:
    """int32 [pairs, columns] as a column slice of wider packed rows (the runner's view), each
    column within its table; the first pair takes every table's last row."""
    limits = torch.repeat_interleave(torch.tensor(table_rows), torch.tensor(layout.sizes))
    sparse = (torch.rand(pairs, layout.columns) * limits).long().clamp_(max=limits - 1)
    if pairs:
        sparse[0] = limits - 1
    packed = torch.zeros((pairs, layout.columns + 14), dtype=torch.int32)
    packed[:, 14:] = sparse.int()
    return packed[:, 14:]


def within_rounding(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Every value within one fp16 step (at its magnitude) of the other's."""
    step = torch.finfo(torch.float16).eps * want.float().abs().clamp(min=2.0**-14)
    return bool(((got.float() - want.float()).abs() <= step).all())


def report(label: str, exact: bool, same: bool) -> bool:
    print(f"{label}: {'equal' if same else 'DIFFER'} ({'bit for bit' if exact else 'rounding'})")
    return same


def check_fp16(label: str, sizes: tuple[int, ...], width: int, pairs: int, grid: bool) -> bool:
    """The kernel in each launch form against embedding_bag over the stacked fp16 table."""
    layout = BagLayout(sizes)
    table_rows = SMALL_ROWS[: layout.bags]
    starts = table_offsets(table_rows)
    table = (grid_table if grid else normal_table)(starts[-1], width)
    sparse = indices(pairs, table_rows, layout)
    bases, bags = layout.column_bases(starts, CPU), layout.column_bags(CPU)
    want = pooled_lookup.embedding_bag_rows(sparse, bases, table, layout)
    good = True
    for config in pooled_lookup.CANDIDATES:
        got = pooled_lookup.pooled_rows(sparse, bases, bags, table, layout, width, config=config)
        same = torch.equal(got, want) if grid else within_rounding(got, want)
        good &= report(f"fp16 {label}, {pairs} pairs, {config.label()}", grid, same)
    return good


def check_int8(label: str, sizes: tuple[int, ...], width: int, pairs: int) -> bool:
    """The kernel over int8 rows against embedding_bag over the values they stand for (fp32),
    rounded to fp16 as the kernel's output is."""
    layout = BagLayout(sizes)
    table_rows = SMALL_ROWS[: layout.bags]
    starts = table_offsets(table_rows)
    quantized = pooled_lookup.quantize_rows(normal_table(starts[-1], width))
    sparse = indices(pairs, table_rows, layout)
    bases, bags = layout.column_bases(starts, CPU), layout.column_bags(CPU)
    values = pooled_lookup.dequantize_rows(quantized, width)
    want = pooled_lookup.embedding_bag_rows(sparse, bases, values, layout).half()
    good = True
    for config in pooled_lookup.INT8_CANDIDATES:
        got = pooled_lookup.pooled_rows(
            sparse, bases, bags, quantized, layout, width, int8=True, config=config
        )
        good &= report(
            f"int8 {label}, {pairs} pairs, {config.label()}", False, within_rounding(got, want)
        )
    return good


def check_shards() -> bool:
    """Rows split in two at an uneven row: each shard's kernel equals the torch path's masked
    embedding_bag of the same shard (per_sample_weights 0 outside it), and the two add up."""
    layout = BagLayout(MULTI_HOT_SIZES)
    starts = table_offsets(SMALL_ROWS)
    table = grid_table(starts[-1], 16)
    sparse = indices(7, SMALL_ROWS, layout)
    bases, bags = layout.column_bases(starts, CPU), layout.column_bags(CPU)
    flat = (sparse.long() + bases).reshape(-1)
    offsets = layout.bag_offsets(7, CPU)
    middle = starts[-1] // 2 + 3
    total = torch.zeros(7, layout.bags * 16, dtype=torch.float16)
    good = True
    for lo, hi in ((0, middle), (middle, starts[-1])):
        inside = (flat >= lo) & (flat < hi)
        want = F.embedding_bag(
            torch.where(inside, flat - lo, torch.zeros_like(flat)),
            table[lo:hi],
            offsets,
            mode="sum",
            per_sample_weights=inside.half(),
        ).view(7, -1)
        got = pooled_lookup.pooled_rows(
            sparse, bases, bags, table[lo:hi], layout, 16, rows=(lo, hi), config=KernelConfig(32)
        )
        good &= report(f"shard rows {lo}..{hi}", True, torch.equal(got, want))
        total += got
    whole = pooled_lookup.embedding_bag_rows(sparse, bases, table, layout)
    return good & report("shards added", True, torch.equal(total, whole))


def stand_in_source(width: int, stacked: bool) -> GpuModelSource:
    widths = REAL.reduced(REAL.embedding // width)
    rows = SMALL_ROWS
    tables = np.asarray(grid_table(sum(rows), width).float().numpy()) if stacked else None
    return GpuModelSource(
        initial_weights(widths, (), 0), widths, rows, tables, None if stacked else 5
    )


def check_runner_tables() -> bool:
    """The runner's tables (gpu_tables.StackedTables) on the CPU: for the stand-in's numpy tables,
    the kernel (replicated, and sharded over two "devices") gives embedding_bag's bits, and the
    int8 tables are int8_rows.quantize_rows of those rows; for real-size rows drawn on the device,
    the int8 tables are the fp16 draws quantized."""
    source = stand_in_source(8, stacked=True)
    layout = BagLayout(MULTI_HOT_SIZES)
    sparse = indices(6, SMALL_ROWS, layout)
    offsets = layout.bag_offsets(6, CPU)
    want = StackedTables(source, [CPU], gpu_tables.TORCH).pooled(sparse, offsets, CPU)
    good = True
    for embedding, devices in (
        (gpu_tables.TORCH, [CPU, CPU]),
        (gpu_tables.KERNEL, [CPU]),
        (gpu_tables.KERNEL, [CPU, CPU]),
    ):
        got = StackedTables(source, devices, embedding).pooled(sparse, offsets, CPU)
        good &= report(
            f"runner tables, {embedding} over {len(devices)}", True, torch.equal(got, want)
        )
    int8 = StackedTables(source, [CPU], gpu_tables.KERNEL_INT8)
    assert source.stacked_tables is not None
    stored = int8.shards[0][3].numpy()
    good &= report(
        "runner int8 tables are quantize_rows'",
        True,
        np.array_equal(stored, int8_rows.quantize_rows(source.stacked_tables)),
    )
    values = torch.from_numpy(int8_rows.dequantize_rows(stored, 8))
    got = int8.pooled(sparse, offsets, CPU)
    want8 = pooled_lookup.embedding_bag_rows(
        sparse, layout.column_bases(table_offsets(SMALL_ROWS), CPU), values, layout
    ).half()
    good &= report("runner tables, kernel-int8", False, within_rounding(got, want8))
    drawn = stand_in_source(8, stacked=False)
    fp16 = StackedTables(drawn, [CPU], gpu_tables.TORCH).shards[0][3]
    rows8 = StackedTables(drawn, [CPU], gpu_tables.KERNEL_INT8).shards[0][3]
    same = torch.equal(rows8, pooled_lookup.quantize_rows(fp16)) and bool(fp16.abs().sum() > 0)
    return good & report("drawn int8 tables are the fp16 draws quantized", True, same)


def check_interaction_columns() -> bool:
    """The pooled rows written in place into the dense part's interaction tensor (the runner's
    way: no concatenation): every way of pooling puts there what it returns on its own and leaves
    the bottom MLP's columns alone; the dense part's probability from that tensor is, bit for bit,
    its probability from the pooled rows."""
    from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers

    source = stand_in_source(8, stacked=True)
    layout = BagLayout(MULTI_HOT_SIZES)
    sparse = indices(6, SMALL_ROWS, layout)
    offsets = layout.bag_offsets(6, CPU)
    dense = torch.randn(6, 13)
    layers = DenseLayers(source.dense, source.widths, CPU, "fp16")
    good = True
    for embedding, devices in (
        (gpu_tables.TORCH, [CPU]),
        (gpu_tables.KERNEL, [CPU]),
        (gpu_tables.KERNEL, [CPU, CPU]),
        (gpu_tables.KERNEL_INT8, [CPU]),
    ):
        tables = StackedTables(source, devices, embedding)
        alone = tables.pooled(sparse, offsets, CPU)
        x0 = layers.interaction(6, CPU).fill_(7.0)
        tables.pooled(sparse, offsets, CPU, layers.pooled_columns(x0))
        width = source.widths.embedding
        placed = torch.equal(x0[:, width:], alone) and bool((x0[:, :width] == 7.0).all())
        same = torch.equal(layers.probability_from(dense, x0), layers.probability(dense, alone))
        good &= report(f"pooled in place, {embedding} over {len(devices)}", True, placed and same)
    return good


def check_quantize_twins() -> bool:
    """pooled_lookup.quantize_rows (torch) and int8_rows.quantize_rows (numpy): the same bytes,
    for rows of zeros, of ties at .5 and of normal draws, 8 and 128 wide."""
    good = True
    for width in (8, 128):
        rows = torch.randn(50, width) * 3
        rows[3] = 0
        rows[4, :] = torch.arange(width) - width / 2 + 0.5
        rows[4, 0] = 127.0  # scale 1: every other value a tie
        same = np.array_equal(
            pooled_lookup.quantize_rows(rows).numpy(), int8_rows.quantize_rows(rows.numpy())
        )
        good &= report(f"quantize_rows torch = numpy, {width} wide", True, same)
    return good


def wall_ms_per_batch(way: Any, batch_sparse: Any) -> float:
    began = time.perf_counter()
    for sparse in batch_sparse:
        way(sparse)
    return (time.perf_counter() - began) * 1e3 / len(batch_sparse)


def check_pooling_ab() -> bool:
    """torch_raw --pooling_ab's comparison (pooling_ab.compare_ways) on the CPU, timed by the wall
    clock: every way timed, none failed, the fp16 kernel's sums embedding_bag's (grid values), the
    int8 kernel's within the int8 rows' rounding; and its table printed."""
    tables = StackedTables(stand_in_source(8, stacked=True), [CPU], gpu_tables.KERNEL)
    layout = BagLayout(MULTI_HOT_SIZES)
    batches = [indices(pairs, SMALL_ROWS, layout) for pairs in (5, 3)]
    record = pooling_ab.compare_ways(tables, batches, wall_ms_per_batch, rounds=1)
    print(pooling_ab.format_pooling(record))
    methods = {row["method"]: row for row in record["methods"]}
    fp16 = [row for name, row in methods.items() if not name.startswith("kernel int8")]
    int8 = [row for name, row in methods.items() if name.startswith("kernel int8")]
    same = (
        not record["failed"]
        and len(fp16) == 1 + len(pooled_lookup.CANDIDATES)
        and len(int8) == 3
        and all(row["max_abs_diff"] == 0 and row["ms"] > 0 for row in fp16)
        and all(0 < row["max_abs_diff"] < 0.05 * record["reference_max_abs"] for row in int8)
    )
    return report("pooling_ab's table", False, same)


if __name__ == "__main__":
    torch.manual_seed(0)
    odd = (0, 1, 3, 0, 17, 2)  # bags of no rows, of one, a bag past a chunk's 16
    results = [
        check_fp16("real bags, 128 wide", MULTI_HOT_SIZES, 128, 5, grid=True),
        check_fp16("real bags, 128 wide", MULTI_HOT_SIZES, 128, 3, grid=False),
        check_fp16("real bags, 8 wide", MULTI_HOT_SIZES, 8, 1, grid=True),
        check_fp16("bags 0,1,3,0,17,2, 24 wide", odd, 24, 5, grid=True),
        check_fp16("bags 0,1,3,0,17,2, 24 wide", odd, 24, 0, grid=True),
        check_int8("real bags, 128 wide", MULTI_HOT_SIZES, 128, 3),
        check_int8("bags 0,1,3,0,17,2, 8 wide", odd, 8, 5),
        check_shards(),
        check_runner_tables(),
        check_interaction_columns(),
        check_quantize_twins(),
        check_pooling_ab(),
    ]
    sys.exit(0 if all(results) else 1)
