"""How a large batch of variable-length sequences runs without padding: every real token, no more.

BERT's per-token work (every GEMM, LayerNorm, GELU: nearly all of it) does not care which sequence a
token belongs to; only attention does, and a variable-length attention kernel takes the sequences'
boundaries (`cu_seqlens`, as NVIDIA's TensorRT plugins and FlashAttention's varlen kernel do). So a
large batch's real tokens are concatenated into one [tokens, hidden] stream: on SQuAD's dev set (mean real length
178 of 384 tokens) it computes about 16% fewer tokens than the length buckets (128/192/256/320/384),
whose padding to the bucket's length remains. Small batches stay on the buckets' CUDA graphs: a
varlen call runs eagerly, and its hundreds of kernel launches cost more than its padding saves.

Pure planning: no torch, tested on the CPU. The runner gathers the tokens and scatters the logits
with the index arrays made here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError

# A batch whose real tokens reach this runs varlen (about 46 SQuAD features); below it, on the
# bucket graphs. A judgement, not a measured crossover: on an H100 varlen was 1.37x the buckets at
# batch 1,024 (docs/performance.md), Server's batches (~100 features) ran it, and SingleStream and
# MultiStream (1 and 8 features) stay on the graphs, where launch costs dominate.
VARLEN_MIN_TOKENS = 8192
# Tokens per varlen call: bounds the activations (the FFN's [tokens, 4096] in fp16 is 512 MB at
# 64k tokens) while keeping each GEMM large.
VARLEN_CALL_TOKENS = 65536


@dataclass(frozen=True)
class VarlenCall:
    """One varlen call: the tokens of the samples at `positions` (batch positions, shortest first)
    concatenated."""

    positions: npt.NDArray[np.int64]
    cu_seqlens: npt.NDArray[np.int32]  # [len(positions) + 1]: each sequence's first token
    max_length: int

    @property
    def tokens(self) -> int:
        return int(self.cu_seqlens[-1])


def plan_varlen(
    lengths: npt.NDArray[np.integer[Any]], call_tokens: int = VARLEN_CALL_TOKENS
) -> tuple[VarlenCall, ...]:
    """The calls a batch with these real lengths runs in: sorted by length (each call's longest
    sequence sets how many attention blocks every sequence of it launches), cut where a call would
    exceed `call_tokens`."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) and int(lengths.min()) < 1:
        raise HarnessError("a sequence needs at least one real token (its [CLS])")
    if len(lengths) and int(lengths.max()) > call_tokens:
        raise HarnessError(f"a sequence of {int(lengths.max())} tokens exceeds a varlen call")
    order = np.argsort(lengths, kind="stable").astype(np.int64)
    ends = np.cumsum(lengths[order])
    calls: list[VarlenCall] = []
    start, consumed = 0, 0
    while start < len(order):
        # The last sequence that still fits in this call.
        stop = int(np.searchsorted(ends, consumed + call_tokens, side="right"))
        positions = order[start:stop]
        seqlens = lengths[positions]
        cu = np.zeros(len(positions) + 1, dtype=np.int32)
        np.cumsum(seqlens, out=cu[1:])
        calls.append(VarlenCall(positions, cu, int(seqlens.max())))
        consumed = int(ends[stop - 1])
        start = stop
    return tuple(calls)


def token_offsets(call: VarlenCall) -> npt.NDArray[np.int64]:
    """Each token's place in its own sequence (0 for [CLS]): its position id, and its column
    in the sample row it is read from and the logits row it is written to."""
    seqlens = np.diff(call.cu_seqlens).astype(np.int64)
    starts = np.repeat(call.cu_seqlens[:-1].astype(np.int64), seqlens)
    offsets: npt.NDArray[np.int64] = np.arange(call.tokens, dtype=np.int64) - starts
    return offsets


def flat_indices(
    rows: npt.NDArray[np.integer[Any]], call: VarlenCall, row_width: int
) -> npt.NDArray[np.int64]:
    """Where each token sits in a flattened [samples, row_width] array whose sample at batch
    position i is row `rows[i]` (sample rows to read ids from, or logits rows to write to)."""
    seqlens = np.diff(call.cu_seqlens).astype(np.int64)
    bases = np.repeat(np.asarray(rows, dtype=np.int64)[call.positions] * row_width, seqlens)
    indices: npt.NDArray[np.int64] = bases + token_offsets(call)
    return indices
