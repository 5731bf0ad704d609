"""GPT-J's attention over the slot cache (`cache_layout`), in two parts merged by log-sum-exp.

A decode step's query rows are a slot's beams. Part one is the slot's prompt, shared by its beams:
the slot's `beams` queries attend its prompt keys as one small batch, so the prompt's keys and
values are read once per slot, not once per beam. On a GPU in fp16/bf16 this is FlashAttention's
variable-length kernel (torch's own `_flash_attention_forward`, the op behind its SDPA) with
`seqused_k`: each slot reads only its prompt's real length out of its fixed-size region. Part two
is what the beams generated: the slot's generated columns, each beam seeing only the columns its
ancestry names (a boolean mask per beam), at most beams x 129 keys; plain batched matmuls in
float32 softmax. Each part returns its output and its log-sum-exp per query and head, and the two
are merged exactly: softmax over the union of keys.

Elsewhere (the CPU, float32, or a torch without `seqused_k`) part one is the same computation with
a padding mask over the whole prompt region: the reference the GPU path is checked against, and
what the fp32 equality check runs.

torch is passed in, never imported at module level: CPU hosts import the package without it.
"""

from __future__ import annotations

from typing import Any


def lse_rows(lse: Any, rows: int, heads: int) -> Any:
    """FlashAttention's varlen log-sum-exp as [rows, heads] float32, from either layout torch has
    returned it in: [heads, total_q], or [batch, heads, max_q] (every batch holding max_q rows)."""
    if lse.dim() == 2:
        return lse[:, :rows].t().float()
    batch, _, max_q = lse.shape
    return lse.permute(0, 2, 1).reshape(batch * max_q, heads)[:rows].float()


def prompt_attention_flash(
    torch: Any,
    q: Any,
    prompt_k: Any,
    prompt_v: Any,
    prompt_lengths: Any,
    cu_q: Any,
    cu_k: Any,
) -> tuple[Any, Any]:
    """q [slots * beams, heads, head_dim]; prompt_k/v [slots, max_prompt, heads, head_dim];
    prompt_lengths int32 [slots] (each >= 1); cu_q = arange(slots + 1) * beams and
    cu_k = arange(slots + 1) * max_prompt, int32. Returns ([rows, heads, head_dim], lse [rows, heads])."""
    slots, max_prompt, heads, head_dim = prompt_k.shape
    rows = q.shape[0]
    out, lse, *_ = torch.ops.aten._flash_attention_forward(
        q,
        prompt_k.view(slots * max_prompt, heads, head_dim),
        prompt_v.view(slots * max_prompt, heads, head_dim),
        cu_q,
        cu_k,
        rows // slots,
        max_prompt,
        0.0,
        False,
        False,
        seqused_k=prompt_lengths,
    )
    return out, lse_rows(lse, rows, heads)


def prompt_attention_efficient(
    torch: Any,
    q: Any,
    prompt_k: Any,
    prompt_v: Any,
    prompt_lengths: Any,
    cu_q: Any,
    cu_k: Any,
) -> tuple[Any, Any]:
    """`prompt_attention_flash`'s computation on the memory-efficient (CUTLASS) kernel, whose
    query tiles are smaller than FlashAttention's 128 rows: a slot's 4 beam queries waste less of
    each tile. Its `seqlen_k` reads each slot's real prompt length, as `seqused_k` does."""
    slots, max_prompt, heads, head_dim = prompt_k.shape
    rows = q.shape[0]
    beams = rows // slots
    out, lse, *_ = torch.ops.aten._efficient_attention_forward(
        q.view(1, rows, heads, head_dim),
        prompt_k.view(1, slots * max_prompt, heads, head_dim),
        prompt_v.view(1, slots * max_prompt, heads, head_dim),
        None,
        cu_q,
        cu_k,
        beams,
        max_prompt,
        0.0,
        0,
        True,
        seqlen_k=prompt_lengths,
    )
    # lse: [slots, heads, beams rounded up to the kernel's alignment]
    lse = lse[:, :, :beams].permute(0, 2, 1).reshape(rows, heads).float()
    return out.view(rows, heads, head_dim), lse


def prompt_attention_dense(
    torch: Any, q: Any, prompt_k: Any, prompt_v: Any, prompt_lengths: Any
) -> tuple[Any, Any]:
    """The same as `prompt_attention_flash`, over the whole prompt region with a padding mask: the
    matmuls in the cache's precision, the softmax in float32."""
    slots, max_prompt, heads, head_dim = prompt_k.shape
    beams = q.shape[0] // slots
    qh = q.view(slots, beams, heads, head_dim).permute(0, 2, 1, 3)  # [S, H, B, D]
    k = prompt_k.permute(0, 2, 3, 1)  # [S, H, D, P]
    scores = torch.matmul(qh, k).float() * (head_dim**-0.5)  # [S, H, B, P]
    keys = torch.arange(max_prompt, device=q.device)
    visible = keys[None, :] < prompt_lengths.to(torch.int64)[:, None]  # [S, P]
    scores = scores.masked_fill(~visible[:, None, None, :], float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # [S, H, B]
    probs = torch.exp(scores - lse[..., None]).to(prompt_v.dtype)
    out = torch.matmul(probs, prompt_v.permute(0, 2, 1, 3))  # [S, H, B, D]
    rows = slots * beams
    return (
        out.permute(0, 2, 1, 3).reshape(rows, heads, head_dim).to(q.dtype),
        lse.permute(0, 2, 1).reshape(rows, heads),
    )


def generated_attention(
    torch: Any, q: Any, gen_k: Any, gen_v: Any, visible: Any
) -> tuple[Any, Any]:
    """q [slots * beams, heads, head_dim]; gen_k/v [slots, heads, columns, head_dim]; visible bool
    [slots, beams, columns] (at least one column per row). Returns ([rows, heads, head_dim],
    lse [rows, heads]): each beam's attention over the generated columns its ancestry names."""
    slots, heads, _, head_dim = gen_k.shape
    beams = q.shape[0] // slots
    qh = q.view(slots, beams, heads, head_dim).permute(0, 2, 1, 3)  # [S, H, B, D]
    scores = torch.matmul(qh, gen_k.transpose(-1, -2)).float() * (head_dim**-0.5)
    scores = scores.masked_fill(~visible[:, None, :, :], float("-inf"))  # [S, H, B, C]
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.exp(scores - lse[..., None]).to(gen_v.dtype)
    out = torch.matmul(probs, gen_v)  # [S, H, B, D]
    rows = slots * beams
    return (
        out.permute(0, 2, 1, 3).reshape(rows, heads, head_dim),
        lse.permute(0, 2, 1).reshape(rows, heads),
    )


def merge(torch: Any, first: tuple[Any, Any], second: tuple[Any, Any]) -> Any:
    """Softmax attention over two disjoint key sets from each one's output and log-sum-exp."""
    (out1, lse1), (out2, lse2) = first, second
    lse = torch.logaddexp(lse1, lse2)
    w1 = torch.exp(lse1 - lse)[..., None]
    w2 = torch.exp(lse2 - lse)[..., None]
    return (out1.float() * w1 + out2.float() * w2).to(out1.dtype)
