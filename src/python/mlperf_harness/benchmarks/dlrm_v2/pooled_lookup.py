"""DLRM-v2's pooled lookups, the ways the torch runner can do them (the run's `--embedding`, resolved
into torch_plan.TorchPlan):

- `torch`: torch's `embedding_bag` (sum) over the stacked fp16 table, every bag of the batch in
  one call.
- `kernel` (the default: 6x as fast as `torch` on an H200): our Triton kernel (pooling_kernel.py)
  over the same fp16 table: the same sums.
- `kernel-int8`: the kernel over the tables as int8 rows with a scale per row (int8_rows.py's
  layout, 160 bytes a row of 128 against 256): the sums of the rows those stand for.

All three read a batch's indices as the runner holds them, [pairs, 214] int32 (each table's own
row numbers), and write [pairs, 26 * width] fp16. `pooled_rows` launches the kernel;
`embedding_bag_rows` is the torch form (and the kernel's reference: the tests compare the two,
the kernel run by Triton's interpreter on the CPU).

Imports torch and triton: GPU hosts and the development environment only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
import torch.nn.functional as F  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.benchmarks.dlrm_v2.int8_rows import QMAX, SCALE_BYTES, row_bytes
from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class KernelConfig:
    """How the kernel is launched: columns (rows) loaded at once, pairs a program, warps. (The
    kernel's loops are unrolled: no software pipelining, so no stages to choose.)"""

    chunk: int = 64
    pairs_per_program: int = 1
    warps: int = 4

    def label(self) -> str:
        return f"chunk {self.chunk}, {self.pairs_per_program} pair(s)/program, {self.warps} warps"


# The launch forms the runner uses, the fastest that torch_raw --pooling_ab timed on one H200
# (docs/performance.md#dlrm-v2): fp16 rows 128 columns at once by 4 warps, 1.19 ms a real-size
# batch (3.6 TB/s of rows; 256 columns by 8 warps, the guess before, 1.68 ms); int8 rows 128 at
# once by 8 warps, 2.05 ms.
DEFAULT_CONFIG = KernelConfig(chunk=128, warps=4)
DEFAULT_INT8_CONFIG = KernelConfig(chunk=128, warps=8)
CANDIDATES = (
    DEFAULT_CONFIG,
    KernelConfig(chunk=256, warps=8),
    KernelConfig(chunk=128, warps=8),
    KernelConfig(chunk=64, warps=8),
    KernelConfig(chunk=64),
    KernelConfig(chunk=32),
    KernelConfig(chunk=64, pairs_per_program=2),
)
INT8_CANDIDATES = (
    DEFAULT_INT8_CONFIG,
    KernelConfig(chunk=256, warps=8),
    KernelConfig(chunk=64, warps=8),
)


def _block(n: int) -> int:
    return max(16, 1 << (max(1, n) - 1).bit_length())


@dataclass(frozen=True)
class BagLayout:
    """Each pair's bags: `sizes[t]` consecutive columns of its indices are bag t's."""

    sizes: tuple[int, ...]

    @property
    def columns(self) -> int:
        return sum(self.sizes)

    @property
    def bags(self) -> int:
        return len(self.sizes)

    def column_bags(self, device: Any) -> torch.Tensor:
        bags = torch.repeat_interleave(
            torch.arange(self.bags, dtype=torch.int32), torch.tensor(self.sizes)
        )
        return bags.to(device)

    def column_bases(self, table_starts: Sequence[int], device: Any) -> torch.Tensor:
        """int64 [columns]: the stacked row where each column's table starts."""
        starts = torch.tensor(list(table_starts[: self.bags]), dtype=torch.int64)
        return torch.repeat_interleave(starts, torch.tensor(self.sizes)).to(device)

    def bag_offsets(self, pairs: int, device: Any) -> torch.Tensor:
        """embedding_bag's offsets for `pairs` pairs: where each bag starts in the flat indices."""
        sizes = torch.tensor(self.sizes, dtype=torch.int64).repeat(pairs)
        return (torch.cumsum(sizes, 0) - sizes).to(device)


def pooled_rows(
    sparse: torch.Tensor,
    column_bases: torch.Tensor,
    column_bags: torch.Tensor,
    table: torch.Tensor,
    layout: BagLayout,
    width: int,
    *,
    int8: bool = False,
    rows: tuple[int, int] | None = None,
    config: KernelConfig | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """[pairs, bags * width] fp16: every bag's rows summed by the Triton kernel. `sparse` is int32
    [pairs, columns] with unit column stride (a column slice of the packed rows is fine); `table` fp16
    [rows, width], or int8 rows (int8_rows.py) with `int8`; `rows`: the stacked rows (lo, hi) this
    table holds (a shard), all of them when None; `config`: the launch form (the default's for
    fp16 or int8 rows when None); `out`: where to write the sums (fp16 [pairs, bags * width] with
    unit column stride: the dense part's interaction columns, say), a new tensor when None."""
    from mlperf_harness.benchmarks.dlrm_v2.pooling_kernel import pooled_rows_kernel

    pairs = sparse.shape[0]
    if sparse.dtype != torch.int32 or sparse.stride(1) != 1 or sparse.shape[1] != layout.columns:
        raise HarnessError(f"the kernel reads int32 [pairs, {layout.columns}] indices")
    expected = (torch.int8, row_bytes(width)) if int8 else (torch.float16, width)
    if (table.dtype, table.shape[1]) != expected or table.stride(1) != 1:
        raise HarnessError(f"the kernel reads a {expected[0]} table {expected[1]} wide")
    lo, hi = rows if rows is not None else (0, table.shape[0])
    if config is None:
        config = DEFAULT_INT8_CONFIG if int8 else DEFAULT_CONFIG
    shape = (pairs, layout.bags * width)
    if out is None:
        out = torch.empty(shape, dtype=torch.float16, device=sparse.device)
    elif tuple(out.shape) != shape or out.dtype != torch.float16 or out.stride(1) != 1:
        raise HarnessError(f"the kernel writes fp16 {list(shape)} with unit column stride")
    if pairs == 0:
        return out
    scales = table.view(torch.float16) if int8 else table
    grid = (-(-pairs // config.pairs_per_program),)
    pooled_rows_kernel[grid](
        sparse,
        column_bases,
        column_bags,
        table,
        scales,
        out,
        pairs,
        lo,
        hi,
        sparse.stride(0),
        table.stride(0),
        out.stride(0),
        COLUMNS=layout.columns,
        BAGS=layout.bags,
        WIDTH=width,
        BAGS_BLOCK=_block(layout.bags),
        WIDTH_BLOCK=_block(width),
        CHUNK=config.chunk,
        PAIRS_PER_PROGRAM=config.pairs_per_program,
        INT8=int8,
        num_warps=config.warps,
    )
    return out


def embedding_bag_rows(
    sparse: torch.Tensor,
    column_bases: torch.Tensor,
    table: torch.Tensor,
    layout: BagLayout,
    bag_offsets: torch.Tensor | None = None,
) -> torch.Tensor:
    """What the runner computes with torch: one embedding_bag (sum) over every bag of the batch,
    [pairs, bags * width] in the table's dtype. `bag_offsets`: layout.bag_offsets of at least these
    pairs (the runner keeps one for its largest batch)."""
    pairs = sparse.shape[0]
    indices = (sparse.to(torch.int64) + column_bases).reshape(-1)
    if bag_offsets is None:
        bag_offsets = layout.bag_offsets(pairs, sparse.device)
    pooled = F.embedding_bag(indices, table, bag_offsets[: pairs * layout.bags], mode="sum")
    return pooled.view(pairs, layout.bags * table.shape[1])


def quantize_rows(values: torch.Tensor) -> torch.Tensor:
    """int8_rows.quantize_rows in torch (on any device): [rows, width] float -> int8 rows."""
    x = values.float()
    count, width = x.shape
    scale = (x.abs().amax(dim=1) / QMAX).half()
    divisor = scale.float()[:, None]
    safe = torch.where(divisor != 0, divisor, torch.ones_like(divisor))
    q = torch.where(divisor != 0, torch.round(x / safe), torch.zeros_like(x))
    out = torch.zeros((count, row_bytes(width)), dtype=torch.int8, device=values.device)
    out[:, :width] = q.clamp_(-QMAX, QMAX).to(torch.int8)
    out[:, width : width + SCALE_BYTES] = scale.view(torch.int8).view(count, SCALE_BYTES)
    return out


def dequantize_rows(table: torch.Tensor, width: int) -> torch.Tensor:
    """The float32 values of int8 rows: q * s."""
    scale = table[:, width : width + SCALE_BYTES].contiguous().view(torch.float16).float()
    return table[:, :width].float() * scale
