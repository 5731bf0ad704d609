"""How many programs share one unit's keys in a split-K ("flash decoding") attention kernel: the
Llama and GPT-J decode kernels (torch_llama/decode_kernel.py, torch_gptj/decode_kernel.py) both
cut each unit's keys (a row's or a slot's, per head) into chunks only where the units alone are
too few programs to fill the GPU, each chunk long enough that its partial result's write and the
combining kernel do not cost what the split gains. Decided from fixed shapes alone, so that a
CUDA graph's launch grid holds it. Pure arithmetic: CI tests it without torch or Triton."""

from __future__ import annotations


def split_count(have: int, wanted: int, length: int, least: int, most: int | None = None) -> int:
    """1 where `have` programs (units x heads) already reach `wanted` (the GPU's fill); else as
    many as make up the difference, each chunk at least `least` of the `length` (keys or key
    blocks) a unit can hold, at most `most`; never below 1."""
    if have >= wanted:
        return 1
    splits = min(-(-wanted // have), length // least)
    if most is not None:
        splits = min(splits, most)
    return max(1, splits)
