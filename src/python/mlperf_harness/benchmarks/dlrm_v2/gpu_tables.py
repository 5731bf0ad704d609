"""DLRM-v2's stacked tables in GPU memory for the torch runner (torch_runner.py), and how a batch's
lookups are pooled over them (pooled_lookup.py's ways: the run's `--embedding`, torch_plan.py).

The tables are fp16 rows, or int8 rows with a scale each (int8_rows.py) for `kernel-int8`: from the
stand-in's numpy tables, or drawn on the device for the real size (seeded, FILL_ROWS at a time: the
int8 rows are the same fp16 draws quantized). All on one device (replicated), or one row range per
device (sharded: each shard pools the indices in its rows, the others add nothing, and the partial
sums are added on the runner's device).

Imports torch (lazily): GPU hosts, and the development environment's CPU tests, which build these
tables on the CPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.dlrm_v2.gpu_model import GpuModelSource, shard_bounds
from mlperf_harness.benchmarks.dlrm_v2.int8_rows import quantize_rows, row_bytes
from mlperf_harness.benchmarks.dlrm_v2.topology import MULTI_HOT_SIZES, table_offsets
from mlperf_harness.config.fields import DLRM_EMBEDDINGS
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.errors import HarnessError

FILL_ROWS = 1 << 22  # rows drawn per call when a real-size table is made on the device
# torch's embedding_bag over fp16 rows, our Triton kernel over the same rows (the default), the
# kernel over int8 rows with their scales (pooled_lookup.py).
TORCH, KERNEL, KERNEL_INT8 = DLRM_EMBEDDINGS


class StackedTables:
    """The stacked tables (fp16 rows, or int8 rows with their scales for `kernel-int8`): all on one
    device (replicated), or one row range per device (sharded); and how a batch is pooled over
    them (`embedding`: one of EMBEDDINGS)."""

    def __init__(self, source: GpuModelSource, devices: Sequence[Any], embedding: str) -> None:
        torch = import_torch()
        from mlperf_harness.benchmarks.dlrm_v2 import pooled_lookup

        self.width = source.widths.embedding
        self.embedding = embedding
        self.int8 = embedding == KERNEL_INT8
        self.layout = pooled_lookup.BagLayout(MULTI_HOT_SIZES)
        starts = table_offsets(source.table_rows)
        bounds = shard_bounds(source.total_rows, len(devices))
        self.shards: list[tuple[Any, int, int, Any]] = []
        self._constants: dict[Any, tuple[Any, Any]] = {}
        for device, (lo, hi) in zip(devices, bounds, strict=True):
            self._constants[device] = (
                self.layout.column_bases(starts, device),
                self.layout.column_bags(device),
            )
            if source.stacked_tables is not None:
                rows = np.ascontiguousarray(source.stacked_tables[lo:hi])
                if self.int8:
                    table = torch.from_numpy(quantize_rows(rows)).to(device)
                else:
                    table = torch.from_numpy(rows).to(device=device, dtype=torch.float16)
            else:
                table = self._drawn(source, device, lo, hi)
            self.shards.append((device, lo, hi, table))

    def _drawn(self, source: GpuModelSource, device: Any, lo: int, hi: int) -> Any:
        """Seeded random rows lo..hi of the real-size tables, made on `device`: fp16, or those fp16
        rows as int8 rows (the same draws either way, FILL_ROWS at a time)."""
        torch = import_torch()
        from mlperf_harness.benchmarks.dlrm_v2 import pooled_lookup

        row_shape = (row_bytes(self.width),) if self.int8 else (self.width,)
        dtype = torch.int8 if self.int8 else torch.float16
        table = torch.empty((hi - lo, *row_shape), dtype=dtype, device=device)
        scale = 1.0 / float(np.sqrt(self.width))
        for start in range(0, hi - lo, FILL_ROWS):
            stop = min(start + FILL_ROWS, hi - lo)
            generator = torch.Generator(device=device)
            generator.manual_seed(int(source.table_seed or 0) * 1_000_003 + lo + start)
            if not self.int8:
                table[start:stop].normal_(0.0, scale, generator=generator)
                continue
            drawn = torch.empty((stop - start, self.width), dtype=torch.float16, device=device)
            drawn.normal_(0.0, scale, generator=generator)
            table[start:stop] = pooled_lookup.quantize_rows(drawn)
        return table

    def pooled_by(self, embedding: str) -> StackedTables:
        """These tables pooled another way (torch_raw --grid's variants): the same fp16 rows for
        `torch` and `kernel`, a copy quantized to int8 rows on their devices for `kernel-int8`
        (FILL_ROWS at a time). Only from fp16 rows."""
        import copy

        if self.int8:
            raise HarnessError("int8 rows cannot be pooled as fp16 ones: make the fp16 tables")
        other = copy.copy(self)
        other.embedding = embedding
        other.int8 = embedding == KERNEL_INT8
        if other.int8:
            other.shards = [
                (device, lo, hi, int8_table(table, self.width))
                for device, lo, hi, table in self.shards
            ]
        return other

    @property
    def sharded(self) -> bool:
        return len(self.shards) > 1

    def constants(self, device: Any) -> tuple[Any, Any]:
        """(where each column's table starts, each column's bag) on one of the tables' devices."""
        return self._constants[device]

    def pooled(self, sparse: Any, bag_offsets: Any, device: Any, out: Any = None) -> Any:
        """[pairs, 26 * width] fp16: every bag of the batch's pairs summed. `sparse`: int32
        [pairs, 214] on `device`, each table's own rows; `bag_offsets`: embedding_bag's, for at
        least these pairs, on `device`. `out`: where the sums go ([pairs, 26 * width] with unit
        column stride, on `device`: the dense part's interaction columns), returned; the kernel
        over replicated tables writes them there itself, the other ways copy them in."""
        total = self._pooled(sparse, bag_offsets, device, out)
        return total if out is None or total is out else out.copy_(total)

    def _pooled(self, sparse: Any, bag_offsets: Any, device: Any, out: Any = None) -> Any:
        """pooled's sums: written into `out` by the kernel over replicated tables (where `out` is
        fp16), a new tensor otherwise."""
        torch = import_torch()
        F = torch.nn.functional
        from mlperf_harness.benchmarks.dlrm_v2 import pooled_lookup

        if self.embedding != TORCH:
            in_place = out is not None and not self.sharded and out.dtype == torch.float16
            parts = []
            for shard_device, lo, hi, table in self.shards:
                bases, bags = self.constants(shard_device)
                part = pooled_lookup.pooled_rows(
                    sparse.to(shard_device),
                    bases,
                    bags,
                    table,
                    self.layout,
                    self.width,
                    int8=self.int8,
                    rows=(lo, hi),
                    out=out if in_place else None,
                )
                parts.append(part.to(device))
            return _added(parts)
        bases, _ = self.constants(device)
        if not self.sharded:
            return pooled_lookup.embedding_bag_rows(
                sparse, bases, self.shards[0][3], self.layout, bag_offsets
            )
        indices = (sparse.to(torch.int64) + bases).reshape(-1)
        parts = []
        for shard_device, lo, hi, table in self.shards:
            local = indices.to(shard_device)
            inside = (local >= lo) & (local < hi)
            part = F.embedding_bag(
                torch.where(inside, local - lo, torch.zeros_like(local)),
                table,
                bag_offsets[: len(indices) // self.layout.columns * self.layout.bags].to(
                    shard_device
                ),
                mode="sum",
                per_sample_weights=inside.to(table.dtype),
            )
            parts.append(part.to(device))
        return _added(parts).view(sparse.shape[0], -1)


def int8_table(table: Any, width: int) -> Any:
    """An fp16 table as int8 rows on its device, FILL_ROWS at a time (a second copy: 160 bytes a
    row of 128)."""
    torch = import_torch()
    from mlperf_harness.benchmarks.dlrm_v2 import pooled_lookup

    out = torch.empty((table.shape[0], row_bytes(width)), dtype=torch.int8, device=table.device)
    for start in range(0, table.shape[0], FILL_ROWS):
        stop = min(start + FILL_ROWS, table.shape[0])
        out[start:stop] = pooled_lookup.quantize_rows(table[start:stop])
    return out


def _added(parts: Sequence[Any]) -> Any:
    """The shards' partial sums added, on the runner's device (one shard: its sums)."""
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total
