"""Causal attention over prompts packed into one batch without padding, shared by the torch decoder
engines (GPT-J, Llama 2): FlashAttention's variable-length kernel (torch's own
`_flash_attention_forward`, the op behind its SDPA) on a GPU in fp16/bf16, which also takes fewer
key/value heads than query heads (grouped-query attention: no copy of the keys per query head);
elsewhere (the CPU, float32) each prompt's attention by scaled_dot_product_attention in float32,
the reference the GPU path is checked against.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from typing import Any


def flash_available(torch: Any, device: Any, dtype: Any) -> bool:
    """Whether this torch offers FlashAttention's variable-length kernel with `seqused_k` here."""
    if getattr(device, "type", str(device)) != "cuda" or dtype not in (
        torch.float16,
        torch.bfloat16,
    ):
        return False
    schema = torch.ops.aten._flash_attention_forward.default._schema
    return any(argument.name == "seqused_k" for argument in schema.arguments)


def prefill_attention(
    torch: Any, q: Any, k: Any, v: Any, cu_seqlens: Any, lengths: list[int], flash: bool
) -> Any:
    """Causal attention within each prompt of a packed batch: q [tokens, heads, head_dim], k and v
    [tokens, kv_heads, head_dim] (kv_heads dividing heads), prompts bounded by `cu_seqlens` (int32,
    [prompts + 1]; `lengths` the same on the host)."""
    if flash:
        longest = max(lengths)
        return torch.ops.aten._flash_attention_forward(
            q, k, v, cu_seqlens, cu_seqlens, longest, longest, 0.0, True, False
        )[0]
    grouped = q.shape[1] != k.shape[1]
    pieces, start = [], 0
    for length in lengths:
        part = slice(start, start + length)
        qh, kh, vh = (t[part].transpose(0, 1).float() for t in (q, k, v))
        out = torch.nn.functional.scaled_dot_product_attention(
            qh, kh, vh, is_causal=True, enable_gqa=grouped
        )
        pieces.append(out.transpose(0, 1).to(q.dtype))
        start += length
    return torch.cat(pieces)


def token_groups(lengths: list[int], budget: int) -> list[list[int]]:
    """Prompt indices in the caller's order cut into packed forwards of at most `budget` tokens
    (a longer prompt alone in its own)."""
    groups: list[list[int]] = []
    tokens = 0
    for i, length in enumerate(lengths):
        if not groups or tokens + length > budget:
            groups.append([])
            tokens = 0
        groups[-1].append(i)
        tokens += length
    return groups
