"""A decode step's attention for the torch Llama engine (options.py names them): one query per row,
`heads` query heads sharing `kv_heads` key/value heads (query head h reads key/value head
h // (heads / kv_heads), Hugging Face's repeat_kv), each row attending its own cache up to and with
its new token.

- `masked_gqa`: SDPA with enable_gqa and a boolean mask [rows, 1, 1, length] over keys whose
  scales are already in. Where no fused kernel takes grouped heads with a mask, torch runs its
  math path: the keys and values repeated per query head (x8) and, for bf16 on CUDA, in float32.
- `folded`: the group of query heads that share a key/value head folded into the query length,
  [rows, kv_heads, group, dim] against [rows, kv_heads, length, dim]: plain multi-head attention
  with a mask broadcast over the group, which the memory-efficient kernel runs, the keys read once
  per key/value head; the FP8 key scale multiplied into the queries and the value scale into the
  output (scores = q . (k8 s_k) = (q s_k) . k8), so the cache is only converted.
- `packed`: each row's keys one run of a packed [entries, kv_heads, dim] (cu_k bounds them):
  FlashAttention's varlen kernel (grouped heads natively), scales folded as in `folded`; without
  FlashAttention (the CPU, float32), each row's own SDPA: the reference (`own_rows`).
- "fp8kernel": decode_kernel.py's Triton kernels read each row's keys from the cache where they lie
  (FP8 converted in registers: no copy, no gather), scales folded as in `folded`; `cached` is their
  reference (the CPU without Triton's interpreter): `own_rows` over each row's keys as read from
  the cache, the scales folded the same way.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any


def masked_gqa(torch: Any, q: Any, keys: Any, values: Any, visible: Any) -> Any:
    """q [rows, heads, dim]; keys, values [rows, kv_heads, length, dim]; visible bool
    [rows, length]. Returns [rows, heads, dim]."""
    out = torch.nn.functional.scaled_dot_product_attention(
        q[:, :, None, :], keys, values, attn_mask=visible[:, None, None, :], enable_gqa=True
    )
    return out[:, :, 0, :]


def additive_mask(torch: Any, visible: Any, dtype: Any) -> Any:
    """visible bool [rows, length] as SDPA's additive mask [rows, 1, 1, length] in `dtype`, made
    once a step for every layer (SDPA would convert a boolean one in each)."""
    zero = torch.zeros((), dtype=dtype, device=visible.device)
    return torch.where(visible, zero, float("-inf")).to(dtype)[:, None, None, :]


def folded(
    torch: Any, q: Any, keys: Any, values: Any, mask: Any, scales: tuple[float, float]
) -> Any:
    """q [rows, heads, dim]; keys, values [rows, kv_heads, length, dim] unscaled; mask additive
    [rows, 1, 1, length]. Returns [rows, heads, dim]."""
    rows, heads, dim = q.shape
    kv_heads = keys.shape[1]
    k_scale, v_scale = scales
    grouped = q.reshape(rows, kv_heads, heads // kv_heads, dim)
    if k_scale != 1.0:
        grouped = grouped * k_scale
    out = torch.nn.functional.scaled_dot_product_attention(
        grouped, keys, values, attn_mask=mask, scale=dim**-0.5
    )
    if v_scale != 1.0:
        out = out * v_scale
    return out.reshape(rows, heads, dim)


def packed(
    torch: Any,
    q: Any,
    keys: Any,
    values: Any,
    cu_q: Any,
    cu_k: Any,
    max_k: int,
    scales: tuple[float, float],
    flash: bool,
    lengths: list[int] | None = None,
) -> Any:
    """q [rows, heads, dim]; keys, values [entries, kv_heads, dim] unscaled, row r's the run
    cu_k[r]..cu_k[r + 1] (int32), at most `max_k` long; cu_q = 0..rows (int32). Without flash,
    `lengths` (each run's length on the host) drives the reference. Returns [rows, heads, dim]."""
    k_scale, v_scale = scales
    if k_scale != 1.0:
        q = q * k_scale
    if flash:
        out = torch.ops.aten._flash_attention_forward(
            q.contiguous(), keys, values, cu_q, cu_k, 1, max_k, 0.0, False, False
        )[0]
    else:
        if lengths is None:
            raise RuntimeError("packed attention without FlashAttention needs the run lengths")
        bounds = [0, *itertools.accumulate(lengths)]
        out = own_rows(torch, q, [(keys[a:b], values[a:b]) for a, b in itertools.pairwise(bounds)])
    if v_scale != 1.0:
        out = out * v_scale
    return out


def own_rows(torch: Any, q: Any, runs: Sequence[tuple[Any, Any]]) -> Any:
    """The references' attention: row r's SDPA over its own keys and values runs[r] ([length,
    kv_heads, dim] each). q [rows, heads, dim] -> [rows, heads, dim]."""
    pieces = []
    for row, (keys, values) in enumerate(runs):
        piece = torch.nn.functional.scaled_dot_product_attention(
            q[row][None, :, None, :],
            keys.transpose(0, 1)[None],
            values.transpose(0, 1)[None],
            enable_gqa=True,
        )
        pieces.append(piece[0, :, 0, :])
    return torch.stack(pieces)


def cached(torch: Any, q: Any, runs: Sequence[tuple[Any, Any]], scales: tuple[float, float]) -> Any:
    """What decode_kernel.py computes: `own_rows` over each row's keys and values as read from the
    cache (converted, unscaled), the scales folded into the query and the output as there."""
    k_scale, v_scale = scales
    if k_scale != 1.0:
        q = q * k_scale
    out = own_rows(torch, q, runs)
    return out * v_scale if v_scale != 1.0 else out
