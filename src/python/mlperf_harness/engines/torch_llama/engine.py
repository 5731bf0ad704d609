"""TorchLlamaEngine: generation/engine.py's DecoderEngine for Llama 2 with greedy decoding (one row
per slot) over a KV cache allocated once (cache.py: FP8 or the model's dtype), in the ways
`options` (options.py) chooses (its defaults: the fastest variant an H200 timed):

- prefill: one forward per prompt ("serial"), or the prompts of a call packed into forwards of at
  most `prefill_tokens` tokens ("packed"); keys and values written into each prompt's slot, the
  last position's logits held (prefill.py). "static": a call of one prompt over a fixed length
  bucket, under a CUDA graph on a GPU (static_prefill.py), once the FP8 cache's scales are set;
  other calls packed. "chunked": prompts queued, their tokens run in the next decode step's forward
  (at most `prefill_tokens` of them a step: a longer prompt over several), one read of the weights
  for both (chunked_prefill.py); the first prefill packed, where the FP8 cache's scales are set.
- candidates: on the device, log-softmax of each slot's held logits, EOS blocked where asked, top
  k; only [n, k] numbers come back to the host.
- advance: one decode step over slots 0..the highest live one: each new token's keys and values
  written at its position, attention over each slot's cache up to and with it (decode_attention.py),
  the logits held. Eagerly with attention "gqa" as the first engine did (`_decode`), or over fixed
  shapes that a CUDA graph can replay (static_step.py: `graphs`, or attention "folded", "packed"
  or "fp8kernel").
- activation_scale (FP8 weights): the activations of each product quantized per row or per
  tensor (fp8_linear.py); the engine runs a view of its model in that form (its tensors shared).
- fused (FP8 weights, row-wise): each product's input made by one Triton kernel
  (fused_kernels.py), or on a CPU without Triton by its torch reference (elementwise.py).

Not done here (said where figures are reported): paged attention (a slot holds room for 2,048
tokens whatever its sample needs).

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from mlperf_harness.engines.torch_aot.torch_host import triton_runs_on
from mlperf_harness.engines.torch_llama import elementwise
from mlperf_harness.engines.torch_llama.cache import KvCache
from mlperf_harness.engines.torch_llama.chunked_prefill import ChunkedPrefill
from mlperf_harness.engines.torch_llama.decode_attention import masked_gqa
from mlperf_harness.engines.torch_llama.module import TorchLlama
from mlperf_harness.engines.torch_llama.options import EngineOptions
from mlperf_harness.engines.torch_llama.prefill import prefill_one, prefill_packed
from mlperf_harness.engines.torch_llama.static_prefill import StaticPrefill
from mlperf_harness.engines.torch_llama.static_step import StaticStep
from mlperf_harness.engines.uploads import to_device
from mlperf_harness.engines.varlen_attention import flash_available, token_groups
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import BoolArray, Candidates, Float32Array, Int64Array


class TorchLlamaEngine:
    def __init__(
        self,
        model: TorchLlama,
        slots: int,
        max_prompt: int,
        max_new: int,
        eos_id: int,
        kv_fp8: bool = True,
        options: EngineOptions | None = None,
    ) -> None:
        torch, shape = model.torch, model.shape
        if slots < 1:
            raise HarnessError(f"the Llama engine needs at least one slot, got {slots}")
        if not 0 <= eos_id < shape.vocab_size:
            raise HarnessError(f"EOS id {eos_id} is outside the vocabulary of {shape.vocab_size}")
        if max_prompt + max_new > model.positions:
            raise HarnessError(
                f"{max_prompt} + {max_new} tokens exceed the model's {model.positions} positions"
            )
        options = (options or EngineOptions()).check()
        model = model.with_activation_scale(options.activation_scale)  # FP8 layers only
        if options.fused is None:  # auto: fused where the products allow it
            options = replace(options, fused=model.fused_by_default)
        self.options = options  # as this engine runs them
        if options.fused:
            model = model.with_fused_inputs(fused_inputs(model.device))
        self.torch, self.model, self._eos = torch, model, eos_id
        self._slots, self.max_prompt, self.max_new = slots, max_prompt, max_new
        self.kv_fp8 = kv_fp8
        device = model.device
        self.cache = KvCache(
            torch, len(model.blocks), slots, max_prompt + max_new, model.kv_heads,
            shape.head_dim, model.dtype, device, kv_fp8,
        )  # fmt: skip
        self.lengths = np.zeros(slots, np.int64)  # tokens in each slot's cache; 0: free
        self.held = torch.zeros(slots, shape.vocab_size, device=device, dtype=torch.float32)
        self.flash = flash_available(torch, device, model.dtype)
        self.static: StaticStep | None = None
        if self.options.graphs or self.options.attention != "gqa":
            self.static = StaticStep(
                model, self.cache, self.held, self.options.attention, self.flash,
                self.options.graphs,
            )  # fmt: skip
        self.static_prefill: StaticPrefill | None = None
        if self.options.prefill == "static":
            static = self.static
            self.static_prefill = StaticPrefill(
                model, self.cache, self.held, self.flash, self.options.graphs, max_prompt,
                pool=lambda: static.pool_handle() if static is not None else None,
            )  # fmt: skip
        self.chunked: ChunkedPrefill | None = None
        if self.options.prefill == "chunked":
            self.chunked = ChunkedPrefill(
                model, self.cache, self.held, self.flash, self.options.prefill_tokens,
                self.static.kernel if self.static is not None else None,
            )  # fmt: skip

    def drop_graphs(self) -> None:
        """Free the decode step's and the prefills' CUDA graphs (before its tensor-parallel group
        is left), the work they launched done."""
        if self.static_prefill is not None:
            self.static_prefill.drop_graphs()
        if self.static is not None:
            self.static.drop_graphs()
        if self.model.device.type == "cuda":
            self.torch.cuda.synchronize(self.model.device)

    # --- DecoderEngine ---------------------------------------------------------------------

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def beams(self) -> int:
        return 1

    @property
    def max_length(self) -> int:
        return self.max_prompt + self.max_new

    @property
    def eos_id(self) -> int:
        return self._eos

    @property
    def joins_prefill(self) -> bool:
        return self.chunked is not None

    @property
    def prefilling(self) -> frozenset[int]:
        return self.chunked.slots if self.chunked is not None else frozenset()

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        self.check_prefill(slots, prompts)
        if self.chunked is not None:
            first = 0
            if not self.cache.calibrated:  # the FP8 scales from the first prompt, packed
                prefill_packed(
                    self.model, self.cache, self.held, slots[:1], prompts[:1], self.flash
                )
                first = 1
            for slot, prompt in zip(slots[first:], prompts[first:], strict=True):
                self.chunked.add(slot, prompt)
        elif self.options.prefill == "serial":
            for slot, prompt in zip(slots, prompts, strict=True):
                prefill_one(self.model, self.cache, self.held, slot, prompt)
        elif self.static_prefill is not None and len(prompts) == 1 and self.cache.calibrated:
            self.static_prefill.run(slots[0], prompts[0])
        else:
            lengths = [int(prompt.size) for prompt in prompts]
            for group in token_groups(lengths, self.options.prefill_tokens):
                prefill_packed(
                    self.model, self.cache, self.held, [slots[i] for i in group],
                    [prompts[i] for i in group], self.flash,
                )  # fmt: skip
        for slot, prompt in zip(slots, prompts, strict=True):
            self.lengths[slot] = prompt.size

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        torch, vocab = self.torch, self.model.shape.vocab_size
        n = len(slots)
        for slot in slots:
            self._check_slot(slot, live=True)
        self._prefilled(slots)  # asked before the advance that would have joined them
        if beam_scores.shape != (n, 1) or block_eos.shape != (n,):
            raise HarnessError(
                f"candidates: beam_scores {beam_scores.shape} must be {(n, 1)} and block_eos "
                f"{block_eos.shape} {(n,)}"
            )
        if not 1 <= k <= vocab:
            raise HarnessError(f"candidates: k {k} is not in 1..{vocab}")
        device = self.model.device
        rows = to_device(torch, np.asarray(slots, np.int64), device)
        scores = torch.log_softmax(self.held[rows], dim=-1)
        blocked = to_device(torch, np.asarray(block_eos, bool), device)
        scores[:, self._eos] = torch.where(blocked, float("-inf"), scores[:, self._eos])
        scores = scores + to_device(torch, beam_scores, device)
        values, tokens = torch.topk(scores, k, dim=-1, sorted=True)
        return Candidates(
            values.cpu().numpy(),
            tokens.cpu().numpy().astype(np.int64),
            np.zeros((n, k), np.int64),
        )

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        chunked = self.chunked
        if not len(slots) and not (chunked is not None and chunked.queue):
            return
        self.check_advance(slots, parents, tokens)
        flat = np.asarray(tokens, np.int64).reshape(-1)
        rows = np.asarray(slots, np.int64)
        self._prefilled(slots)  # a slot advanced before its prompt is in: the prompt first
        if chunked is not None and chunked.queue:  # the prompts' next chunks join this step
            chunked.run(rows, flat, self.lengths[rows])
        elif self.static is None:
            self._decode(rows, flat)
        else:
            self.static.run(rows, flat, self.lengths[rows])
        self.lengths[rows] += 1

    def flush_prefills(self) -> None:
        """Every queued prompt (chunked prefill) wholly into the cache now, in forwards of its own."""
        if self.chunked is not None:
            self.chunked.flush()

    def _prefilled(self, slots: Sequence[int]) -> None:
        """The queued prompts run now where any of `slots` waits among them (chunked prefill)."""
        if self.prefilling & set(slots):
            self.flush_prefills()

    def release(self, slots: Sequence[int]) -> None:
        self.check_release(slots)
        if self.chunked is not None:
            self.chunked.drop(slots)
        for slot in slots:
            self.lengths[slot] = 0

    def check_prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        """One line for a prefill this engine cannot take (before anything runs: tensor
        parallelism's rank 0 checks here before telling its workers)."""
        if len(slots) != len(prompts):
            raise HarnessError(f"prefill: {len(slots)} slots for {len(prompts)} prompts")
        if len(set(slots)) != len(slots):
            raise HarnessError("prefill: a slot named twice in one call")
        vocab = self.model.shape.vocab_size
        for slot, prompt in zip(slots, prompts, strict=True):
            if prompt.ndim != 1 or prompt.size == 0:
                raise HarnessError("prefill: a prompt must be a non-empty 1-D array of token ids")
            if prompt.size > self.max_prompt:
                raise HarnessError(
                    f"prefill: a prompt of {prompt.size} tokens; this engine holds at most "
                    f"{self.max_prompt}"
                )
            if prompt.min() < 0 or prompt.max() >= vocab:
                raise HarnessError(f"prefill: a token id outside the vocabulary of {vocab}")
            self._check_slot(slot, live=False)

    def check_advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        """One line for a decode step this engine cannot take (before anything runs)."""
        for slot in slots:
            self._check_slot(slot, live=True)
            if self.lengths[slot] >= self.max_length:
                raise HarnessError(f"advance: slot {slot} is full ({self.max_length} tokens)")
        if np.any(np.asarray(parents) != 0):
            raise HarnessError("advance: the Llama engine decodes greedily (one row per slot)")
        flat = np.asarray(tokens, np.int64).reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= self.model.shape.vocab_size):
            raise HarnessError("advance: a token id outside the vocabulary")

    def check_release(self, slots: Sequence[int]) -> None:
        for slot in slots:
            if not 0 <= slot < self._slots:
                raise HarnessError(f"slot {slot} is not one of this engine's {self._slots}")

    # --- the work --------------------------------------------------------------------------

    def _check_slot(self, slot: int, live: bool) -> None:
        if not 0 <= slot < self._slots:
            raise HarnessError(f"slot {slot} is not one of this engine's {self._slots}")
        if live != bool(self.lengths[slot]):
            raise HarnessError(f"slot {slot} is {'free' if live else 'in use'}")

    def _decode(self, slots: Int64Array, tokens: Int64Array) -> None:
        """The first engine's step: eager, masked grouped-query SDPA over the dequantized cache."""
        torch, model, cache = self.torch, self.model, self.cache
        device = model.device
        count = int(slots.max()) + 1  # slots 0..count-1: a view of the cache
        lengths = np.zeros(count, np.int64)
        lengths[slots] = self.lengths[slots]
        longest = int(lengths.max()) + 1
        rows = to_device(torch, slots, device)
        positions = to_device(torch, self.lengths[slots], device)
        rope = model.rope(positions)
        # each slot attends its own cache up to and with its new token; others see one dummy key
        visible = np.arange(longest)[None, :] <= np.maximum(lengths, 0)[:, None]
        mask = to_device(torch, visible, device)
        x = model.embed(to_device(torch, tokens, device))
        for layer, block in enumerate(model.blocks):
            q, k, v = model.project(x, block, rope)
            cache.store(layer, rows, positions, k, v)
            keys, values = cache.dequantized(layer, count, longest)
            queries = torch.zeros(
                (count, model.heads, model.shape.head_dim), device=device, dtype=q.dtype
            )
            queries[rows] = q
            context = masked_gqa(torch, queries, keys, values, mask)[rows]
            x = model.finish(x, block, context)
        self.held[rows] = model.logits(x)


def fused_inputs(device: Any) -> Any:
    """What makes the products' inputs under `fused`: the Triton kernels where Triton runs, else
    their torch reference."""
    if not triton_runs_on(device):
        return elementwise
    try:
        from mlperf_harness.engines.torch_llama import fused_kernels
    except ImportError as error:
        raise HarnessError(
            f"Llama engine: fused=1 runs Triton kernels and Triton is missing ({error})"
        ) from None
    return fused_kernels
