"""decode_kernel.py's one kernel against attention.py's reference (prompt_attention_dense +
generated_attention + merge) on random caches of awkward shape: what the CPU tests run under
Triton's interpreter, and the gate the engine puts each Triton tiling through on its GPU before
timing it (`disagreement`): a kernel that computes otherwise there is never chosen, however fast.

Imports decode_kernel, so triton: only where Triton is installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlperf_harness.engines.torch_gptj import attention, decode_kernel
from mlperf_harness.engines.torch_gptj.decode_kernel import Tiles

# The kernel agrees with the reference within this many units of the dtype's last place at the
# output's largest magnitude (at least 1): both round the probabilities and the output to the
# dtype; the kernel keeps its scores in float32 where the reference's matmul rounds them. (On the
# CPU at 16 heads of 256 in fp16: 2 units apart, each 1 from the float64 truth.)
ULPS = 8


@dataclass
class DecodeCase:
    """One decode step's attention inputs, as the engine's step passes them."""

    q: Any  # [slots * beams, heads, head_dim]
    prompt_k: Any  # [slots, max_prompt, heads, head_dim]
    prompt_v: Any
    lengths: Any  # int32 [slots]
    gen_k: Any  # [slots, heads, columns, head_dim]
    gen_v: Any
    visible: Any  # bool [slots, beams, columns]
    used: Any  # int32 [slots]: (step + 1) x beams

    def run(self, torch: Any, splits: int, tiles: Tiles) -> Any:
        return decode_kernel.decode_attention(
            torch,
            self.q,
            self.prompt_k,
            self.prompt_v,
            self.lengths,
            self.gen_k,
            self.gen_v,
            self.visible,
            self.used,
            splits,
            tiles,
        )

    def reference(self, torch: Any) -> Any:
        prompt = attention.prompt_attention_dense(
            torch, self.q, self.prompt_k, self.prompt_v, self.lengths
        )
        generated = attention.generated_attention(
            torch, self.q, self.gen_k, self.gen_v, self.visible
        )
        return attention.merge(torch, prompt, generated)


@dataclass(frozen=True)
class CaseShape:
    """A random case's sizes: each slot's prompt length and decode step (max_new: the scratch
    step), the cache's regions, the heads."""

    lengths: tuple[int, ...]
    steps: tuple[int, ...]
    max_prompt: int
    max_new: int
    heads: int
    head_dim: int
    beams: int


def random_case(torch: Any, device: Any, dtype: Any, seed: int, shape: CaseShape) -> DecodeCase:
    """Random keys, values and queries of `shape`; a random ancestry masked as the engine's step
    masks it: column t * beams + b' visible to beam b when its ancestry at step t is b' and t <= the
    slot's step, each beam's own column at its step."""
    generator = torch.Generator().manual_seed(seed)
    beams, max_new, heads, head_dim = shape.beams, shape.max_new, shape.heads, shape.head_dim
    slots, columns = len(shape.lengths), beams * (max_new + 1)

    def randn(*shape: int) -> Any:
        return torch.randn(*shape, generator=generator).to(device=device, dtype=dtype)

    ancestry = torch.randint(0, beams, (slots, beams, max_new + 1), generator=generator)
    at = torch.tensor(shape.steps)
    beam_ids = torch.arange(beams)
    ancestry[torch.arange(slots)[:, None], beam_ids[None, :], at[:, None]] = beam_ids[None, :]
    visible = (ancestry[:, :, :, None] == beam_ids) & (
        torch.arange(max_new + 1)[None, None, :, None] <= at[:, None, None, None]
    )
    return DecodeCase(
        q=randn(slots * beams, heads, head_dim),
        prompt_k=randn(slots, shape.max_prompt, heads, head_dim),
        prompt_v=randn(slots, shape.max_prompt, heads, head_dim),
        lengths=torch.tensor(shape.lengths, dtype=torch.int32, device=device),
        gen_k=randn(slots, heads, columns, head_dim),
        gen_v=randn(slots, heads, columns, head_dim),
        visible=visible.reshape(slots, beams, columns).to(device),
        used=((at + 1) * beams).to(device=device, dtype=torch.int32),
    )


def max_error(torch: Any, got: Any, expected: Any) -> float:
    return float((got.float() - expected.float()).abs().max())


def tolerance(torch: Any, expected: Any) -> float:
    """ULPS units of `expected`'s dtype at its largest magnitude (at least 1)."""
    largest = max(1.0, float(expected.float().abs().max()))
    return ULPS * float(torch.finfo(expected.dtype).eps) * largest


def disagreement(
    torch: Any, device: Any, dtype: Any, heads: int, head_dim: int, beams: int, tiles: Tiles
) -> str | None:
    """None where the kernel in `tiles` agrees with the reference on `device` (the engine's heads,
    4 slots of prompts 1, 2 blocks + 1, 3 blocks - 5 and 150 tokens, one on its first step and one
    on the scratch step, whole and in 3 splits); else a line saying by how much it does not."""
    block = tiles.block_n
    lengths = (1, 2 * block + 1, 3 * block - 5, 150)
    shape = CaseShape(lengths, (0, 5, 8, 2), max(lengths), 8, heads, head_dim, beams)
    case = random_case(torch, device, dtype, 0, shape)
    expected = case.reference(torch)
    allowed = tolerance(torch, expected)
    for splits in (1, 3):
        error = max_error(torch, case.run(torch, splits, tiles), expected)
        if not error <= allowed:  # NaN too
            return f"{splits} splits differ from the reference by {error:.3g} (> {allowed:.3g})"
    return None
