"""The torch Llama engine's prefill of one prompt over fixed shapes (options.py's prefill "static"),
so that a CUDA graph can replay it. Interactive admits its prompts one at a time between decode
steps, and every live sample's time per output token carries each admission: an eager prefill
issues each of 80 layers' ops from Python for a prompt whose products are short, and where the
host issues more slowly than the GPU runs them the GPU waits (admitting one prompt held the
serving loop about 94 ms on one H200, its blocking uploads included: engines/uploads.py).

The prompt is padded to a length bucket (PREFILL_BUCKETS, up to the engine's longest prompt), its
tokens first: causal attention leaves each of its positions what it is alone, the padding's keys
and values go to the cache's scratch row, and only the prompt's last position's logits are held.
Products quantized per row (or not at all) see no padding; a per-tensor activation scale would
(options.py refuses that pair). The FP8 cache's scales must be set first (the engine's first
prefill sets them, eagerly): a capture cannot read them back. On a GPU each bucket is captured the
first time it is met, into the decode step's graph pool; elsewhere the same code runs eagerly,
which is what the CPU tests check. Several prompts in one call stay with the packed prefill.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mlperf_harness.engines.torch_llama.cache import KvCache
from mlperf_harness.engines.torch_llama.captured import replay_or_capture
from mlperf_harness.engines.torch_llama.module import TorchLlama
from mlperf_harness.engines.varlen_attention import prefill_attention
from mlperf_harness.generation.engine import Int64Array

# Prompt lengths a graph is captured for (the real-size workload's median is about 160 tokens, its
# longest 1,024): a prompt runs in the smallest bucket that holds it, at most a third of it padding
# past the first bucket.
PREFILL_BUCKETS = (64, 96, 128, 192, 256, 384, 512, 768, 1024)


def prefill_buckets(max_prompt: int) -> tuple[int, ...]:
    """The buckets below `max_prompt`, then `max_prompt` itself: every prompt fits one."""
    return (*(b for b in PREFILL_BUCKETS if b < max_prompt), max_prompt)


class StaticPrefill:
    def __init__(
        self,
        model: TorchLlama,
        cache: KvCache,
        held: Any,
        flash: bool,
        graphs: bool,
        max_prompt: int,
        pool: Callable[[], Any],
    ) -> None:
        torch, device = model.torch, model.device
        self.torch, self.model, self.cache, self.held, self.flash = torch, model, cache, held, flash
        self.on_gpu = getattr(device, "type", str(device)) == "cuda"
        self.graphs_on = graphs and self.on_gpu
        self.buckets = prefill_buckets(max_prompt)
        self.longest = self.buckets[-1]
        # inputs: token ids (padded with 0), the cache row each position writes, the slot, and the
        # prompt's last position
        self.width = 2 * self.longest + 2
        self.inputs = torch.zeros(self.width, dtype=torch.int64, device=device)
        self.host = torch.zeros(self.width, dtype=torch.int64, pin_memory=self.on_gpu)
        self.uploaded = torch.cuda.Event() if self.on_gpu else None
        self.positions = torch.arange(self.longest, device=device)
        self.bounds = {
            length: torch.tensor([0, length], dtype=torch.int32, device=device)
            for length in self.buckets
        }
        self.graphs: dict[int, Any] = {}
        self.pool = pool  # the engine's graph pool, shared with the decode step's graphs
        self.stream: Any = torch.cuda.Stream(device) if self.graphs_on else None

    def drop_graphs(self) -> None:
        self.graphs.clear()

    def run(self, slot: int, prompt: Int64Array) -> None:
        """`prompt` (at most the engine's longest) into `slot`'s cache, its last logits held."""
        length = min(b for b in self.buckets if b >= prompt.size)
        self._upload(slot, prompt)
        if not self.graphs_on:
            self._prefill(length)
            return
        replay_or_capture(
            self.torch, self.graphs, length, self.stream, self.pool,
            lambda: self._prefill(length),
        )  # fmt: skip

    def _upload(self, slot: int, prompt: Int64Array) -> None:
        n, m = int(prompt.size), self.longest
        host = np.zeros(self.width, np.int64)
        host[:n] = prompt
        host[m : 2 * m] = self.cache.scratch
        host[m : m + n] = slot
        host[2 * m], host[2 * m + 1] = slot, n - 1
        if self.uploaded is not None:
            self.uploaded.synchronize()  # the last prefill's copy has left the pinned buffer
        self.host.numpy()[:] = host
        self.inputs.copy_(self.host, non_blocking=self.on_gpu)
        if self.uploaded is not None:
            self.uploaded.record()

    def _prefill(self, length: int) -> None:
        """The uploaded prompt over `length` positions (what a graph captures)."""
        torch, model, cache, m = self.torch, self.model, self.cache, self.longest
        ids = self.inputs[:length]
        written = self.inputs[m : m + length]
        slot = self.inputs[2 * m : 2 * m + 1]
        last = self.inputs[2 * m + 1 : 2 * m + 2]
        positions = self.positions[:length]
        rope = model.rope(positions)
        x = model.embed(ids)
        for layer, block in enumerate(model.blocks):
            q, k, v = model.project(x, block, rope)
            cache.store(layer, written, positions, k, v)
            context = prefill_attention(
                torch, q.contiguous(), k.contiguous(), v.contiguous(), self.bounds[length],
                [length], self.flash,
            )  # fmt: skip
            x = model.finish(x, block, context)
        logits = model.logits(x.index_select(0, last))
        self.held.index_copy_(0, slot, logits.to(self.held.dtype))
