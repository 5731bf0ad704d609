"""The torch Llama engine's decode step over fixed shapes (options.py's `graphs`), so that a CUDA
graph can replay it: the first engine issued ~110 ops per layer from Python each step (80 layers:
~9,000 launches, a host cost of the order of 0.1 s against ~17 ms of weight reads) and copied four
small arrays to the GPU, each a blocking copy.

A step covers rows 0..count-1, count the smallest bucket (all slots, then halvings: GPT-J's
buckets) holding the highest advancing slot; every covered row computes (a row with no sample to
advance gets token 0 at position 0, its keys and values written to the cache's scratch row, its
held logits left as they were). Its attention covers an `extent` rounded up to a bucket too: the
keys' length (attention "gqa" or "folded": every row reads that many keys, masked), the packed
entries (attention "packed": each row's own keys only, gathered, the runs padded with scratch
entries) or, attention "fp8kernel", the keys' length where its kernel splits rows over their keys
and else 0 (one graph per row count then serves every length: each row's kernel program reads its
own length on the device). Its inputs go up as one array (one copy, from pinned memory on a GPU).
On a GPU each (count, extent) is captured as a CUDA graph the first time it is met (that step runs
eagerly on the capture stream, then is captured: a Triton kernel compiles there, before the
capture), the graphs sharing one memory pool; elsewhere the same code runs eagerly, which is what
the CPU tests check.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlperf_harness.engines.graph_buckets import graph_slot_counts
from mlperf_harness.engines.torch_aot.torch_host import triton_runs_on
from mlperf_harness.engines.torch_llama import decode_attention
from mlperf_harness.engines.torch_llama.cache import KvCache
from mlperf_harness.engines.torch_llama.captured import replay_or_capture
from mlperf_harness.engines.torch_llama.module import TorchLlama
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import Int64Array

LENGTH_BUCKET = 256  # keys: "gqa" and "folded" read up to a multiple of this
ENTRY_BUCKETS = 32  # "packed": the most entries (slots x length) cut into this many buckets
PROGRAMS_PER_SM = 2  # "fp8kernel": the programs its launch wants for a full GPU (split_count)
INTERPRETED_PROGRAMS = 16  # and under Triton's interpreter (the CPU tests): one "SM" of 16


def round_up(value: int, step: int, cap: int) -> int:
    return min(cap, -(-value // step) * step)


class StaticStep:
    def __init__(
        self,
        model: TorchLlama,
        cache: KvCache,
        held: Any,
        attention: str,
        flash: bool,
        graphs: bool,
    ) -> None:
        torch, device = model.torch, model.device
        self.torch, self.model, self.cache, self.held = torch, model, cache, held
        self.attention, self.flash = attention, flash
        self.on_gpu = getattr(device, "type", str(device)) == "cuda"
        self.graphs_on = graphs and self.on_gpu
        if self.graphs_on and attention == "packed" and not flash:
            raise HarnessError(
                "Llama engine: packed attention in CUDA graphs needs FlashAttention's varlen "
                "kernel (fp16/bf16 on a GPU, a torch with seqused_k)"
            )
        slots, length = cache.slots, cache.length
        self.counts = graph_slot_counts(slots)
        self.entry_step = max(LENGTH_BUCKET, -(-slots * length // ENTRY_BUCKETS))
        # rows: token, position, cache row written; then (packed) cu_k and the gathered entries
        self.width = 3 * slots + (slots + 1 + slots * length if attention == "packed" else 0)
        self.inputs = torch.zeros(self.width, dtype=torch.int64, device=device)
        self.host = torch.zeros(self.width, dtype=torch.int64, pin_memory=self.on_gpu)
        self.uploaded = torch.cuda.Event() if self.on_gpu else None
        self.cu_q = torch.arange(slots + 1, dtype=torch.int32, device=device)
        self.keys_at = torch.arange(length, device=device)
        self.graphs: dict[tuple[int, int], Any] = {}
        self.pool: Any = None
        self.stream: Any = torch.cuda.Stream(device) if self.graphs_on else None
        self._lengths: list[int] | None = None  # the eager reference's run lengths (packed)
        self._rows: list[int] = []  # and its rows' cache rows (fp8kernel)
        # fp8kernel: its Triton kernels where Triton runs (a GPU, or its interpreter on the CPU,
        # which TRITON_INTERPRET=1 turns on), else its reference (decode_attention.cached)
        self.kernel: Any = None
        self.programs, self.split_keys = INTERPRETED_PROGRAMS, 0
        if attention == "fp8kernel" and triton_runs_on(device):
            self.kernel = _decode_kernel()
            self.split_keys = self.kernel.SPLIT_KEYS  # the fewest keys a split's chunk holds
            if self.on_gpu:
                properties = torch.cuda.get_device_properties(device)
                self.programs = PROGRAMS_PER_SM * properties.multi_processor_count

    def pool_handle(self) -> Any:
        """The memory pool every graph of this engine is captured into (made on first use)."""
        if self.pool is None:
            self.pool = self.torch.cuda.graph_pool_handle()
        return self.pool

    def drop_graphs(self) -> None:
        """Free the captured graphs (a tensor-parallel group's NCCL communicator cannot be
        destroyed while graphs that captured its all-reduces live: parallel.py)."""
        self.graphs.clear()
        self.pool = None

    def run(self, slots: Int64Array, tokens: Int64Array, lengths: Int64Array) -> None:
        """One decode step: `tokens` of `slots` whose caches hold `lengths` tokens."""
        count = min(c for c in self.counts if c > int(slots.max()))
        extent = self._upload(count, slots, tokens, lengths)
        if not self.graphs_on:
            self._step(count, extent)
            return
        replay_or_capture(
            self.torch, self.graphs, (count, extent), self.stream, self.pool_handle,
            lambda: self._step(count, extent),
        )  # fmt: skip

    def _upload(
        self, count: int, slots: Int64Array, tokens: Int64Array, lengths: Int64Array
    ) -> int:
        cache, s = self.cache, self.cache.slots
        host = np.zeros(self.width, np.int64)
        host[2 * s : 2 * s + count] = cache.scratch
        host[slots] = tokens
        host[s + slots] = lengths  # the new token's position
        host[2 * s + slots] = slots
        positions = host[s : s + count]
        if self.attention == "packed":
            extent = self._runs(host, count, positions, host[2 * s : 2 * s + count])
        elif self.attention == "fp8kernel":
            extent = self._split_extent(count, positions)
            self._rows = host[2 * s : 2 * s + count].tolist()
            self._lengths = (positions + 1).tolist()
        else:
            extent = round_up(int(positions.max()) + 1, LENGTH_BUCKET, cache.length)
        if self.uploaded is not None:
            self.uploaded.synchronize()  # the last step's copy has left the pinned buffer
        used = 4 * s + 1 + extent if self.attention == "packed" else 3 * s
        self.host.numpy()[:used] = host[:used]
        self.inputs[:used].copy_(self.host[:used], non_blocking=self.on_gpu)
        if self.uploaded is not None:
            self.uploaded.record()
        return extent

    def _runs(self, host: Any, count: int, positions: Any, written: Any) -> int:
        """Each covered row's cache entries (its own row's first position + 1; a row with no
        sample: the scratch entry its write went to) as one packed list, and cu_k."""
        s, length = self.cache.slots, self.cache.length
        runs = positions + 1
        cu = np.concatenate([[0], np.cumsum(runs)])
        entries = int(cu[-1])
        extent = round_up(entries, self.entry_step, s * length)
        within = np.arange(entries) - np.repeat(cu[:-1], runs)
        index = host[4 * s + 1 :]
        index[:extent] = self.cache.scratch * length
        index[:entries] = np.repeat(written * length, runs) + within
        host[3 * s : 3 * s + count + 1] = cu
        self._lengths = runs.tolist()
        return extent

    def _split_extent(self, count: int, positions: Any) -> int:
        """fp8kernel: the keys' length rounded up to a bucket where its kernel would split
        `count` rows over their keys, else 0 (no split at any length: one graph for all)."""
        cache = self.cache
        if self.kernel is None or self._splits(count, cache.length) == 1:
            return 0
        return round_up(int(positions.max()) + 1, LENGTH_BUCKET, cache.length)

    def _splits(self, count: int, extent: int) -> int:
        if self.kernel is None or not extent:
            return 1
        return int(
            self.kernel.split_count(
                count, self.model.kv_heads, extent, self.programs, self.split_keys
            )
        )

    def _step(self, count: int, extent: int) -> None:
        """Rows 0..count-1 one token on, from the uploaded inputs (what a graph captures)."""
        torch, model, cache, s = self.torch, self.model, self.cache, self.cache.slots
        tokens = self.inputs[:count]
        positions = self.inputs[s : s + count]
        written = self.inputs[2 * s : 2 * s + count]
        rope = model.rope(positions)
        if self.attention == "packed":
            cu_k = self.inputs[3 * s : 3 * s + count + 1].to(torch.int32)
            index = self.inputs[4 * s + 1 : 4 * s + 1 + extent]
        else:
            visible = self.keys_at[None, :extent] <= positions[:, None]
            if self.attention == "folded":
                mask = decode_attention.additive_mask(torch, visible, model.dtype)
        x = model.embed(tokens)
        for layer, block in enumerate(model.blocks):
            q, k, v = model.project(x, block, rope)
            cache.store(layer, written, positions, k, v)
            if self.attention == "gqa":
                keys, values = cache.dequantized(layer, count, extent)
                context = decode_attention.masked_gqa(torch, q, keys, values, visible)
            elif self.attention == "folded":
                keys, values = cache.converted(layer, count, extent)
                context = decode_attention.folded(torch, q, keys, values, mask, cache.scale(layer))
            elif self.attention == "fp8kernel":
                context = self._fp8kernel(layer, q, written, positions, count, extent)
            else:
                keys, values = cache.gathered(layer, index)
                context = decode_attention.packed(
                    torch, q, keys, values, self.cu_q[: count + 1], cu_k, cache.length,
                    cache.scale(layer), self.flash, self._lengths,
                )  # fmt: skip
            x = model.finish(x, block, context)
        logits = model.logits(x)
        held = self.held[:count]
        held.copy_(torch.where((written != cache.scratch)[:, None], logits, held))

    def _fp8kernel(
        self, layer: int, q: Any, written: Any, positions: Any, count: int, extent: int
    ) -> Any:
        """fp8kernel's attention of rows 0..count-1: the kernel over the layer's cache as it lies
        (each row's cache row and position read on the device), or its reference."""
        torch, cache = self.torch, self.cache
        if self.kernel is None:
            runs = [
                cache.own(layer, r, n) for r, n in zip(self._rows, self._lengths or [], strict=True)
            ]
            return decode_attention.cached(torch, q, runs, cache.scale(layer))
        return self.kernel.attention(
            torch, q, cache.keys[layer], cache.values[layer], written, positions,
            cache.scale(layer), cache.fp8, self._splits(count, extent), extent,
        )  # fmt: skip


def _decode_kernel() -> Any:
    """decode_kernel.py (it imports Triton), or one line saying Triton is missing."""
    try:
        from mlperf_harness.engines.torch_llama import decode_kernel
    except ImportError as error:
        raise HarnessError(
            f"Llama engine: attention fp8kernel runs a Triton kernel and Triton is missing ({error})"
        ) from None
    return decode_kernel
