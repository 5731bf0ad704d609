"""The torch Llama engine's prefills (options.py's `prefill`): each prompt's keys and values into
its slot's cache, its last position's logits held for `candidates`.

- `prefill_one` (serial): one forward per prompt; its GEMMs see M = the prompt's length (median
  about 160 tokens in the real-size workload), and each of its ~60 ops per layer is issued by
  Python for that prompt alone.
- `prefill_packed`: the prompts of one call packed end to end into one forward (no padding), so
  that the GEMMs see the sum of their lengths; causal attention within each prompt
  (varlen_attention.py: FlashAttention's varlen kernel on a GPU in fp16/bf16).

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mlperf_harness.engines.torch_llama.cache import KvCache
from mlperf_harness.engines.torch_llama.module import TorchLlama
from mlperf_harness.engines.uploads import to_device
from mlperf_harness.engines.varlen_attention import prefill_attention
from mlperf_harness.generation.engine import Int64Array


def prefill_one(
    model: TorchLlama, cache: KvCache, held: Any, slot: int, prompt: Int64Array
) -> None:
    torch, device, n = model.torch, model.device, int(prompt.size)
    ids = to_device(torch, prompt.astype(np.int64), device)
    positions = torch.arange(n, device=device)
    rope = model.rope(positions)
    x = model.embed(ids)
    for layer, block in enumerate(model.blocks):
        q, k, v = model.project(x, block, rope)
        cache.store(layer, slot, positions, k, v)
        context = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(0, 1)[None],
            k.transpose(0, 1)[None],
            v.transpose(0, 1)[None],
            is_causal=True,
            enable_gqa=True,
        )[0].transpose(0, 1)
        x = model.finish(x, block, context)
    held[slot] = model.logits(x[-1:])[0]


def prefill_packed(
    model: TorchLlama,
    cache: KvCache,
    held: Any,
    slots: Sequence[int],
    prompts: Sequence[Int64Array],
    flash: bool,
) -> None:
    """`prompts` into `slots` by one forward over all their tokens."""
    torch, device = model.torch, model.device
    lengths = [int(prompt.size) for prompt in prompts]
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # one upload: token ids, positions within each prompt, destination rows
    host = np.stack(
        [
            np.concatenate(prompts).astype(np.int64),
            np.arange(starts[-1], dtype=np.int64) - np.repeat(starts[:-1], lengths),
            np.repeat(np.asarray(slots, np.int64), lengths),
        ]
    )
    ids, positions, rows = to_device(torch, host, device)
    cu = to_device(torch, starts.astype(np.int32), device)
    rope = model.rope(positions)
    x = model.embed(ids)
    for layer, block in enumerate(model.blocks):
        q, k, v = model.project(x, block, rope)
        # the FP8 scales from the first prompt alone, as a serial prefill sets them
        cache.calibrate(layer, k[: lengths[0]], v[: lengths[0]])
        cache.store(layer, rows, positions, k, v)
        context = prefill_attention(
            torch, q.contiguous(), k.contiguous(), v.contiguous(), cu, lengths, flash
        )
        x = model.finish(x, block, context)
    last = cu[1:].to(torch.int64) - 1
    held[to_device(torch, np.asarray(slots, np.int64), device)] = model.logits(x[last])
