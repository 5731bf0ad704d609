"""The torch Llama engine's chunked prefill (options.py's prefill "chunked"): a prompt admitted
between decode steps gets no forward of its own; its tokens join the next decode step's forward
(`run`), so that one read of the weights serves both. At 32 slots a decode step is bound by reading
the 70 GB of FP8 weights, and a lone prompt's prefill read them all again (Interactive's admissions
on one H200: 30 ms for 64 tokens by the static prefill, beside a 30 ms step; docs/llama2-70b.md).

At most `budget` prompt tokens (options.py's `prefill_tokens`) join one forward, oldest prompt
first: a longer prompt is cut into chunks over several steps, which bounds what one step adds to
every live sample's time per output token. Within the forward:

- the decode rows attend their own cache up to and with their new token, as a decode step does
  (the "fp8kernel" Triton kernel where it runs, else masked SDPA over the dequantized cache);
- a prompt's first chunk attends its own fresh keys and values causally, as the packed prefill does
  (a prompt whole in one forward holds the packed prefill's logits and cache entries);
- a later chunk attends the entries its earlier chunks left in the cache (FP8 where the cache is,
  as the decode steps read them) and its own, each position up to and with itself.

Only a prompt's last chunk holds logits (its last position's), and the engine's `prefilling` names
the slots whose prompts are not yet wholly in: the scheduler leaves them out of `candidates` until
then. The forward runs eagerly (its shapes change with every admission); a step with no prompt to
join keeps the decode step's CUDA graph (static_step.py). The FP8 cache's scales must be set first
(the engine's first prefill, packed, sets them).

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlperf_harness.engines.torch_llama import decode_attention
from mlperf_harness.engines.torch_llama.cache import KvCache
from mlperf_harness.engines.torch_llama.module import TorchLlama
from mlperf_harness.engines.uploads import to_device
from mlperf_harness.engines.varlen_attention import prefill_attention
from mlperf_harness.generation.engine import Int64Array


@dataclass
class Queued:
    slot: int
    prompt: Int64Array
    done: int = 0  # its tokens already in the cache


@dataclass(frozen=True)
class Chunk:
    queued: Queued
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def last(self) -> bool:
        return self.end == self.queued.prompt.size


class ChunkedPrefill:
    def __init__(
        self,
        model: TorchLlama,
        cache: KvCache,
        held: Any,
        flash: bool,
        budget: int,
        kernel: Any = None,
    ) -> None:
        """`kernel`: decode_kernel.py where the engine's decode attention is "fp8kernel" and
        Triton runs (the decode rows' attention), else None (masked SDPA)."""
        self.torch, self.model, self.cache, self.held = model.torch, model, cache, held
        self.flash, self.budget, self.kernel = flash, budget, kernel
        self.queue: list[Queued] = []

    @property
    def slots(self) -> frozenset[int]:
        return frozenset(queued.slot for queued in self.queue)

    def add(self, slot: int, prompt: Int64Array) -> None:
        self.queue.append(Queued(slot, prompt))

    def drop(self, slots: Sequence[int]) -> None:
        """Forget the prompts of these slots (their samples released before their prefill ended)."""
        self.queue = [queued for queued in self.queue if queued.slot not in set(slots)]

    def flush(self) -> None:
        """Every queued prompt wholly into the cache, in forwards of prompt tokens alone (a caller
        that asks for candidates before the advance that would have joined them)."""
        nothing = np.zeros(0, np.int64)
        while self.queue:
            self.run(nothing, nothing, nothing)

    def run(self, rows: Int64Array, tokens: Int64Array, lengths: Int64Array) -> None:
        """One forward: `tokens` of the decode slots `rows`, whose caches hold `lengths` tokens
        (none: prompts alone), and the next chunks of the queued prompts, at most `budget` tokens."""
        chunks = self._chunks()
        later = [chunk for chunk in chunks if chunk.start > 0]
        first = [chunk for chunk in chunks if chunk.start == 0]
        # Token order: the decode rows, then later chunks, then first chunks: two runs of
        # attention over contiguous slices (over the cache; over the fresh keys)
        ordered = [*later, *first]
        sizes = [chunk.size for chunk in ordered]
        # one upload: token ids, positions, the cache row each token writes
        parts = [(tokens, lengths, rows)] + [
            (
                c.queued.prompt[c.start : c.end],
                np.arange(c.start, c.end),
                np.full(c.size, c.queued.slot),
            )
            for c in ordered
        ]
        columns = zip(*parts, strict=True)
        host = np.stack([np.concatenate(column).astype(np.int64) for column in columns])
        torch, model, cache, device = self.torch, self.model, self.cache, self.model.device
        ids, positions, written = to_device(torch, host, device)
        decode, cached = len(rows), len(rows) + sum(chunk.size for chunk in later)
        first_sizes = [chunk.size for chunk in first]
        cu = to_device(
            torch, np.concatenate([[0], np.cumsum(first_sizes)]).astype(np.int32), device
        )
        count = int(rows.max(initial=-1)) + 1  # the decode rows' attention reads rows 0..count-1
        longest = int(lengths.max(initial=0)) + 1
        visible = None
        if decode and self.kernel is None:
            keys_at = torch.arange(longest, device=device)
            visible = keys_at[None, :] <= positions[:decode, None]
        rope = model.rope(positions)
        x = model.embed(ids)
        for layer, block in enumerate(model.blocks):
            q, k, v = model.project(x, block, rope)
            cache.store(layer, written, positions, k, v)
            pieces = []
            if decode:
                at = written[:decode], positions[:decode]
                pieces.append(
                    self._decode_rows(layer, q[:decode], *at, rows, count, longest, visible)
                )
            start = decode
            for chunk in later:
                end = start + chunk.size
                pieces.append(self._later_chunk(layer, q[start:end], chunk))
                start = end
            if first:
                fq, fk, fv = (t[cached:].contiguous() for t in (q, k, v))
                pieces.append(prefill_attention(torch, fq, fk, fv, cu, first_sizes, self.flash))
            context = pieces[0] if len(pieces) == 1 else torch.cat(pieces)
            x = model.finish(x, block, context)
        # Logits held: each decode row's, and each prompt's last position where its chunk ends it
        ends = np.cumsum([decode, *sizes])  # where each chunk ends in the token order
        picks = [*range(decode), *(int(ends[i + 1]) - 1 for i, c in enumerate(ordered) if c.last)]
        slots = [int(r) for r in rows] + [c.queued.slot for c in ordered if c.last]
        if picks:
            logits = model.logits(x[to_device(torch, np.asarray(picks, np.int64), device)])
            self.held[to_device(torch, np.asarray(slots, np.int64), device)] = logits
        for chunk in chunks:
            chunk.queued.done = chunk.end
        self.queue = [queued for queued in self.queue if queued.done < queued.prompt.size]

    def _chunks(self) -> list[Chunk]:
        """The next chunk of each queued prompt, oldest first, while the budget lasts."""
        chunks, left = [], self.budget
        for queued in self.queue:
            if left <= 0:
                break
            take = min(left, int(queued.prompt.size) - queued.done)
            chunks.append(Chunk(queued, queued.done, queued.done + take))
            left -= take
        return chunks

    def _decode_rows(
        self,
        layer: int,
        q: Any,
        written: Any,
        positions: Any,
        rows: Int64Array,
        count: int,
        longest: int,
        visible: Any,
    ) -> Any:
        """The decode rows' attention: each over its own cache up to and with its new token."""
        torch, cache = self.torch, self.cache
        if self.kernel is not None:
            return self.kernel.attention(
                torch, q.contiguous(), cache.keys[layer], cache.values[layer], written, positions,
                cache.scale(layer), cache.fp8,
            )  # fmt: skip
        keys, values = cache.dequantized(layer, count, longest)
        index = to_device(torch, rows.astype(np.int64), q.device)
        return decode_attention.masked_gqa(
            torch, q, keys.index_select(0, index), values.index_select(0, index), visible
        )

    def _later_chunk(self, layer: int, q: Any, chunk: Chunk) -> Any:
        """A later chunk's attention: its positions over the slot's cache up to and with each (the
        earlier chunks' entries and its own, as the cache holds them), scales folded as the decode
        attention folds them."""
        torch = self.torch
        keys, values = self.cache.own(layer, chunk.queued.slot, chunk.end)
        at = torch.arange(chunk.end, device=q.device)
        visible = at[None, :] <= torch.arange(chunk.start, chunk.end, device=q.device)[:, None]
        k_scale, v_scale = self.cache.scale(layer)
        out = torch.nn.functional.scaled_dot_product_attention(
            (q * k_scale if k_scale != 1.0 else q).transpose(0, 1)[None],
            keys.transpose(0, 1)[None],
            values.transpose(0, 1)[None],
            attn_mask=visible[None, None],
            enable_gqa=True,
        )[0].transpose(0, 1)
        return out * v_scale if v_scale != 1.0 else out
