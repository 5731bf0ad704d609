"""TorchLlamaEngine: generation/engine.py's DecoderEngine for Llama 2 with greedy decoding (one row
per slot) over a KV cache allocated once: per layer keys and values [slots, max_length, kv_heads,
head_dim] (this rank's heads under tensor parallelism), in FP8 (e4m3, one scale per layer and
tensor, set from the first prefill's largest value with a margin) or in the model's dtype.

- prefill: one forward per prompt, causal attention by torch's scaled_dot_product_attention with
  grouped-query attention (enable_gqa: no copy of the keys per query head), its keys and values
  written into its slot, the last position's logits held.
- candidates: on the device, log-softmax of each slot's held logits, EOS blocked where asked, top
  k; only [n, k] numbers come back to the host.
- advance: one decode step over slots 0..the highest live one (a view of the cache, no gather):
  each new token's keys and values written at its position, attention over every slot's cache up
  to the longest live length with a mask of each slot's own length, the logits held.

Not done here (said where figures are reported): CUDA graphs of the decode step (its length
grows each step: a graph would need the full-length cache each time), chunked prefill joined to
decode steps, and paged attention; FP8 keys and values are dequantized for each step's attention.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mlperf_harness.engines.torch_llama.linear import E4M3_MAX
from mlperf_harness.engines.torch_llama.module import TorchLlama
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import BoolArray, Candidates, Float32Array, Int64Array

KV_MARGIN = 4.0  # the FP8 cache's scale: the first prefill's largest value x this, over 448


class TorchLlamaEngine:
    def __init__(
        self,
        model: TorchLlama,
        slots: int,
        max_prompt: int,
        max_new: int,
        eos_id: int,
        kv_fp8: bool = True,
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
        self.torch, self.model, self._eos = torch, model, eos_id
        self._slots, self.max_prompt, self.max_new = slots, max_prompt, max_new
        self.kv_fp8 = kv_fp8
        # FP8 entries kept as their bytes (uint8): indexed writes of float8 tensors are not
        # implemented for every device and torch; a view reads them back as e4m3.
        cache_dtype = torch.uint8 if kv_fp8 else model.dtype
        dims = (slots, max_prompt + max_new, model.kv_heads, shape.head_dim)
        device = model.device
        self.keys = [torch.zeros(dims, device=device, dtype=cache_dtype) for _ in model.blocks]
        self.values = [torch.zeros(dims, device=device, dtype=cache_dtype) for _ in model.blocks]
        self.kv_scale: list[tuple[float, float] | None] = [None] * len(model.blocks)
        self.lengths = np.zeros(slots, np.int64)  # tokens in each slot's cache; 0: free
        self.held = torch.zeros(slots, shape.vocab_size, device=device, dtype=torch.float32)

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

    def prefill(self, slots: Sequence[int], prompts: Sequence[Int64Array]) -> None:
        if len(slots) != len(prompts):
            raise HarnessError(f"prefill: {len(slots)} slots for {len(prompts)} prompts")
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
            self._prefill_one(slot, prompt)

    def candidates(
        self, slots: Sequence[int], beam_scores: Float32Array, block_eos: BoolArray, k: int
    ) -> Candidates:
        torch, vocab = self.torch, self.model.shape.vocab_size
        n = len(slots)
        for slot in slots:
            self._check_slot(slot, live=True)
        if beam_scores.shape != (n, 1) or block_eos.shape != (n,):
            raise HarnessError(
                f"candidates: beam_scores {beam_scores.shape} must be {(n, 1)} and block_eos "
                f"{block_eos.shape} {(n,)}"
            )
        if not 1 <= k <= vocab:
            raise HarnessError(f"candidates: k {k} is not in 1..{vocab}")
        device = self.model.device
        rows = torch.as_tensor(np.asarray(slots, np.int64), device=device)
        scores = torch.log_softmax(self.held[rows], dim=-1)
        blocked = torch.as_tensor(np.asarray(block_eos, bool), device=device)
        scores[:, self._eos] = torch.where(blocked, float("-inf"), scores[:, self._eos])
        scores = scores + torch.as_tensor(beam_scores, device=device)
        values, tokens = torch.topk(scores, k, dim=-1, sorted=True)
        return Candidates(
            values.cpu().numpy(),
            tokens.cpu().numpy().astype(np.int64),
            np.zeros((n, k), np.int64),
        )

    def advance(self, slots: Sequence[int], parents: Int64Array, tokens: Int64Array) -> None:
        if not len(slots):
            return
        for slot in slots:
            self._check_slot(slot, live=True)
            if self.lengths[slot] >= self.max_length:
                raise HarnessError(f"advance: slot {slot} is full ({self.max_length} tokens)")
        if np.any(np.asarray(parents) != 0):
            raise HarnessError("advance: the Llama engine decodes greedily (one row per slot)")
        flat = np.asarray(tokens, np.int64).reshape(-1)
        if flat.min() < 0 or flat.max() >= self.model.shape.vocab_size:
            raise HarnessError("advance: a token id outside the vocabulary")
        self._decode(np.asarray(slots, np.int64), flat)
        self.lengths[np.asarray(slots)] += 1

    def release(self, slots: Sequence[int]) -> None:
        for slot in slots:
            self.lengths[slot] = 0

    # --- the work --------------------------------------------------------------------------

    def _check_slot(self, slot: int, live: bool) -> None:
        if not 0 <= slot < self._slots:
            raise HarnessError(f"slot {slot} is not one of this engine's {self._slots}")
        if live != bool(self.lengths[slot]):
            raise HarnessError(f"slot {slot} is {'free' if live else 'in use'}")

    def _store(self, layer: int, rows: Any, columns: Any, k: Any, v: Any) -> None:
        """Keys and values [tokens, kv_heads, head_dim] into the cache at (rows, columns)."""
        if self.kv_fp8:
            if self.kv_scale[layer] is None:
                self.kv_scale[layer] = (
                    max(float(k.abs().max()), 1e-6) * KV_MARGIN / E4M3_MAX,
                    max(float(v.abs().max()), 1e-6) * KV_MARGIN / E4M3_MAX,
                )
            k_scale, v_scale = self.kv_scale[layer]  # type: ignore[misc]
            e4m3, raw = self.torch.float8_e4m3fn, self.torch.uint8
            k = (k.float() / k_scale).clamp(-E4M3_MAX, E4M3_MAX).to(e4m3).view(raw)
            v = (v.float() / v_scale).clamp(-E4M3_MAX, E4M3_MAX).to(e4m3).view(raw)
        self.keys[layer][rows, columns] = k
        self.values[layer][rows, columns] = v

    def _read(self, layer: int, count: int, length: int) -> tuple[Any, Any]:
        """Slots 0..count-1's first `length` keys and values, [count, kv_heads, length, dim] in the
        model's dtype."""
        k = self.keys[layer][:count, :length].transpose(1, 2)
        v = self.values[layer][:count, :length].transpose(1, 2)
        if self.kv_fp8:
            k_scale, v_scale = self.kv_scale[layer]  # type: ignore[misc]
            e4m3 = self.torch.float8_e4m3fn
            # in the model's dtype throughout: no float32 copy of the whole visible cache
            k = k.view(e4m3).to(self.model.dtype).mul_(k_scale)
            v = v.view(e4m3).to(self.model.dtype).mul_(v_scale)
        return k, v

    def _prefill_one(self, slot: int, prompt: Int64Array) -> None:
        torch, model = self.torch, self.model
        device, n = model.device, int(prompt.size)
        ids = torch.from_numpy(prompt.astype(np.int64)).to(device)
        positions = torch.arange(n, device=device)
        x = model.embed(ids)
        for layer, block in enumerate(model.blocks):
            q, k, v = model.project(x, block, positions)
            self._store(layer, slot, positions, k, v)
            context = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(0, 1)[None],
                k.transpose(0, 1)[None],
                v.transpose(0, 1)[None],
                is_causal=True,
                enable_gqa=True,
            )[0].transpose(0, 1)
            x = model.finish(x, block, context)
        self.held[slot] = model.logits(x[-1:])[0]
        self.lengths[slot] = n

    def _decode(self, slots: Int64Array, tokens: Int64Array) -> None:
        torch, model = self.torch, self.model
        device = model.device
        count = int(slots.max()) + 1  # slots 0..count-1: a view of the cache
        lengths = np.zeros(count, np.int64)
        lengths[slots] = self.lengths[slots]
        longest = int(lengths.max()) + 1
        rows = torch.from_numpy(slots).to(device)
        positions = torch.from_numpy(self.lengths[slots]).to(device)
        # each slot attends its own cache up to and with its new token; others see one dummy key
        visible = np.arange(longest)[None, :] <= np.maximum(lengths, 0)[:, None]
        mask = torch.from_numpy(visible).to(device)[:, None, None, :]
        x = model.embed(torch.from_numpy(tokens).to(device))
        for layer, block in enumerate(model.blocks):
            q, k, v = model.project(x, block, positions)
            self._store(layer, rows, positions, k, v)
            keys, values = self._read(layer, count, longest)
            queries = torch.zeros(
                (count, model.heads, 1, model.shape.head_dim), device=device, dtype=q.dtype
            )
            queries[rows] = q[:, :, None, :]
            context = torch.nn.functional.scaled_dot_product_attention(
                queries, keys, values, attn_mask=mask, enable_gqa=True
            )[rows, :, 0, :]
            x = model.finish(x, block, context)
        self.held[rows] = model.logits(x)
