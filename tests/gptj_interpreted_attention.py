"""Run under TRITON_INTERPRET=1 by test_gptj_decode_kernel_interpreted.py (a process of its own:
Triton reads that variable when the kernels are defined): GPT-J's one-kernel decode attention
(torch_gptj/decode_kernel.py) on the CPU, through the launch code the engine uses, against
attention.py's reference (prompt_attention_dense + generated_attention + merge). Prints one line
per check and exits non-zero when one fails.

The cases are the awkward ones: prompts of 1 token and of lengths no block size divides, slots of
very different lengths, a slot on its first step and one on the scratch step, the visible columns
bounded by each slot's step or not at all, a beam that sees no generated column (then the prompt's
attention alone), a head dim that is no power of two, splits that leave a program no key block,
fp16 and fp32.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import numpy as np
import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.benchmarks.gptj.decoding import beam_search, gptj_config
from mlperf_harness.benchmarks.gptj.session import NumpyGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape, random_weights
from mlperf_harness.engines.torch_gptj import attention, decode_kernel
from mlperf_harness.engines.torch_gptj.cache_layout import CacheLayout
from mlperf_harness.engines.torch_gptj.decode_kernel import TILES, Tiles
from mlperf_harness.engines.torch_gptj.decode_kernel_check import (
    CaseShape,
    disagreement,
    max_error,
    random_case,
    tolerance,
)
from mlperf_harness.engines.torch_gptj.engine import TorchGptjEngine
from mlperf_harness.engines.torch_gptj.module import from_weights
from mlperf_harness.generation.scheduler import generate

BEAMS = 4


def case(
    label: str,
    shape: CaseShape,
    dtype: Any,
    tiles: Tiles,
    splits: int,
    bounded: bool = True,
    blind_beam: bool = False,
) -> bool:
    """One launch against the reference; prints a line. `bounded`: the generated columns read up to
    each slot's step (the engine's bound), else all of them; `blind_beam`: slot 0's beam 1 sees no
    generated column, so its output must be the prompt's attention alone."""
    drawn = random_case(torch, torch.device("cpu"), dtype, len(label), shape)
    if not bounded:
        drawn.used = torch.full_like(drawn.used, drawn.visible.shape[-1])
    if blind_beam:
        expected = drawn.reference(torch)  # with the column, then that row the prompt's alone
        expected[1] = attention.prompt_attention_dense(
            torch, drawn.q, drawn.prompt_k, drawn.prompt_v, drawn.lengths
        )[0][1]
        drawn.visible[0, 1] = False
    else:
        expected = drawn.reference(torch)
    got = drawn.run(torch, splits, tiles)
    allowed = tolerance(torch, expected)
    error = max_error(torch, got, expected)
    good = got.dtype == dtype and got.shape == drawn.q.shape and error <= allowed
    print(f"{label}: {'equal' if good else 'DIFFER'} within {allowed:.2e} (max error {error:.2e})")
    return good


def check_cases() -> bool:
    small = Tiles(block_n=16, warps=4, stages=2)
    # Lengths 1, 70 (4 blocks of 16 and 6) and 37 over a region of 70; slot 1 on its first step,
    # slot 2 on the scratch step (max_new): every column up to it visible.
    uneven = CaseShape((1, 70, 37), (2, 0, 5), 70, 5, 2, 64, BEAMS)
    # A 48-dim head (padded to 64 in the kernel).
    narrow = CaseShape((1, 29), (1, 3), 31, 7, 3, 48, BEAMS)
    # The engine's tilings on a region of 150 tokens (not a multiple of 64 or 32), 36 columns.
    engine_like = CaseShape((150, 3, 97, 64), (8, 0, 3, 7), 150, 8, 2, 32, BEAMS)
    good = True
    for dtype in (torch.float32, torch.float16):
        name = str(dtype).removeprefix("torch.")
        for splits in (1, 2, 3, 7):
            good &= case(f"{name}, uneven, {splits} splits", uneven, dtype, small, splits)
        good &= case(f"{name}, uneven, unbounded", uneven, dtype, small, 3, bounded=False)
        good &= case(f"{name}, blind beam", uneven, dtype, small, 1, blind_beam=True)
        good &= case(f"{name}, blind beam, 4 splits", uneven, dtype, small, 4, True, True)
        # 12 splits of slot 0's 1 + 2 blocks: most programs get no block at all.
        good &= case(f"{name}, head dim 48", narrow, dtype, small, 12)
        for tile_name, tiles in TILES.items():
            for splits in (1, 4):
                label = f"{name}, {tile_name} tiles, {splits} splits"
                good &= case(label, engine_like, dtype, tiles, splits)
    return good


def check_split_count() -> bool:
    """By shape: an H200's 132 SMs at GPT-J's 16 heads, blocks of 64 over 1,919 + 516 keys."""
    blocks = decode_kernel.key_blocks(1919, 516, TILES["triton"])
    counts = {n: decode_kernel.split_count(n, 16, blocks, 132) for n in (119, 57, 28, 14, 7, 1)}
    # 528 programs wanted: 119 and 57 slots make them, 28 take 2 splits; 1 slot as many as keep
    # 4 of the 39 blocks each.
    good = blocks == 39 and counts == {119: 1, 57: 1, 28: 2, 14: 3, 7: 5, 1: 9}
    good &= decode_kernel.split_count(1, 16, 8, 132) == 2  # a short region keeps 4 blocks a split
    print(f"split counts {counts}: {'equal' if good else 'DIFFER'}")
    return good


def check_engine() -> bool:
    """The engine's decode step with the kernel in place of attention.py's parts (each tiling; the
    CPU engine takes no graphs and times nothing, so the kernel is set by hand): a tiny GPT-J in
    fp32 decodes, through the in-flight scheduler, exactly as the reference beam search does (3
    slots for 5 prompts, so slots are reused and some sit on the scratch step)."""
    shape = GptjShape(layers=2, hidden=64, heads=4, rotary_dim=8, vocab_size=97, inner=96)
    weights = random_weights(shape, seed=3)
    weights["lm_head.bias"][5] += 2.0  # EOS sometimes
    config = replace(gptj_config(5), min_new_tokens=2, max_new_tokens=6)
    rng = np.random.default_rng(7)
    prompts = [rng.integers(0, shape.vocab_size, n) for n in (5, 40, 1, 23, 9)]
    expected = [beam_search(NumpyGptj(weights, shape), p, config) for p in prompts]
    good = True
    for name in TILES:
        model = from_weights(torch, weights, shape, torch.device("cpu"), "fp32")
        engine = TorchGptjEngine(model, CacheLayout(3, BEAMS, 40, 6), 5)
        engine.prompt_kernel = name
        same = generate(engine, prompts, config) == expected
        print(f"engine, {name}: decodes {'equal' if same else 'DIFFER'} to the reference")
        good &= same
    return good


def check_gate() -> bool:
    """The engine's build-time gate (decode_kernel_check.disagreement) passes each tiling here, in
    fp32 and fp16, and at GPT-J 6B's heads; and refuses a kernel that computes otherwise (a scale
    off by 1%). (Not bf16: the interpreter's tl.dot gets bf16 products wrong, by orders of
    magnitude, where torch's are right; the engine's gate checks bf16 on the GPU.)"""
    good = True
    for dtype in (torch.float32, torch.float16):
        for name, tiles in TILES.items():
            said = disagreement(torch, torch.device("cpu"), dtype, 2, 32, BEAMS, tiles)
            print(f"gate, {name}, {dtype}: {'equal' if said is None else 'DIFFER: ' + said}")
            good &= said is None
    # At GPT-J 6B's heads (16 of 256 dims), as the engine's gate runs on an H200.
    said = disagreement(torch, torch.device("cpu"), torch.float16, 16, 256, BEAMS, TILES["triton"])
    print(f"gate, GPT-J 6B's heads, fp16: {'equal' if said is None else 'DIFFER: ' + said}")
    good &= said is None
    scale = decode_kernel.LOG2E
    decode_kernel.LOG2E = scale * 1.01
    try:
        said = disagreement(
            torch, torch.device("cpu"), torch.float32, 2, 32, BEAMS, TILES["triton"]
        )
    finally:
        decode_kernel.LOG2E = scale
    refused = said is not None and "differ from the reference" in said
    print(f"gate, a kernel off by 1%: {'refused' if refused else 'DIFFER: taken'}")
    return good and refused


if __name__ == "__main__":
    checks = (check_split_count, check_cases, check_gate, check_engine)
    sys.exit(0 if all([check() for check in checks]) else 1)
