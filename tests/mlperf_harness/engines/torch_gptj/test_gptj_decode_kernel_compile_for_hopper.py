"""GPT-J's one-kernel decode attention (torch_gptj/decode_kernel.py) compiled for Hopper (sm_90) on
this CPU (hopper_compile.py): each tiling the engine times, at GPT-J 6B's heads (16 x 256) and 4
beams, fits an H200 SM's shared memory, pipelines its key and value loads (cp.async), multiplies
on the tensor cores, and ptxas spills no register; the stand-in's 96-dim heads, bf16 and the
splits' combining kernel compile too. What the interpreter checks is what it computes
(test_gptj_decode_kernel_interpreted); neither has run it on a GPU. Skipped where torch or triton
is not installed (CI)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hopper_compile import compile_for_hopper
from torch_needed import needs_torch_and_triton

pytestmark = needs_torch_and_triton

SHARED_PER_BLOCK = 227 * 1024  # the most shared memory a block of an H100 or H200 may take
POINTERS = ("q_ptr", "prompt_k_ptr", "prompt_v_ptr", "gen_k_ptr", "gen_v_ptr", "out_ptr")
STRIDES = ("prompt_slot", "prompt_token", "gen_slot", "gen_head", "visible_slot", "visible_beam")
INDEXES = ("lengths_ptr", "used_ptr", "visible_ptr")
PARTS = ("part_o_ptr", "part_m_ptr", "part_l_ptr")


def attention_form(
    block_n: int, splits: int, head_dim: int = 256, dtype: str = "fp16"
) -> tuple[dict[str, str], dict[str, Any], tuple[str, ...]]:
    """(types, constants, aligned arguments) of the kernel as the engine launches it for 4 beams
    of 16 heads (the cache's tensors, strides and masks all divisible by 16 at GPT-J's shape)."""
    types = dict.fromkeys(POINTERS, f"*{dtype}") | {"lengths_ptr": "*i32", "used_ptr": "*i32"}
    types |= {"visible_ptr": "*u8", "qk_scale": "fp32"} | dict.fromkeys(PARTS, "*fp32")
    types |= dict.fromkeys(STRIDES, "i32")
    dims = max(16, 1 << (head_dim - 1).bit_length())
    constants: dict[str, Any] = {
        "HEADS": 16,
        "BEAMS": 4,
        "ROWS": 16,
        "HEAD_DIM": head_dim,
        "DIMS": dims,
        "BLOCK_N": block_n,
        "SPLITS": splits,
        "PRECISION": "tf32",
    }
    return types, constants, (*POINTERS, *INDEXES, *PARTS, *STRIDES)


def ptxas_report(ptx: str, tmp_path: Path) -> str:
    """What ptxas says of the kernel's registers and spills (Triton's own ptxas)."""
    from triton.backends.nvidia.compiler import get_ptxas  # type: ignore[import-not-found]  # pants: no-infer-dep

    source = tmp_path / "kernel.ptx"
    source.write_text(ptx)
    command = [get_ptxas(90).path, "-v", "--gpu-name", "sm_90a", str(source)]
    command += ["-o", str(tmp_path / "kernel.cubin")]
    return subprocess.run(command, capture_output=True, text=True, check=True).stderr


@pytest.mark.parametrize("splits", [1, 4])
@pytest.mark.parametrize("name", ["triton", "triton-64x3w8", "triton-32x3w8"])
def test_each_tiling_fits_an_sm_and_pipelines_its_loads(
    name: str, splits: int, tmp_path: Path
) -> None:
    from mlperf_harness.engines.torch_gptj import decode_kernel

    tiles = decode_kernel.TILES[name]
    types, constants, aligned = attention_form(tiles.block_n, splits)
    compiled = compile_for_hopper(
        decode_kernel.decode_attention_kernel,
        types,
        constants,
        aligned,
        num_warps=tiles.warps,
        num_stages=tiles.stages,
    )
    assert compiled.metadata.shared <= SHARED_PER_BLOCK
    ptx = compiled.asm["ptx"]
    assert "mma.sync.aligned" in ptx and ".f16.f16" in ptx  # both products on the tensor cores
    assert "cp.async.cg.shared.global" in ptx  # keys and values copied ahead into shared memory
    report = ptxas_report(ptx, tmp_path)
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report


def test_the_tilings_are_the_ones_compiled_here() -> None:
    from mlperf_harness.engines.torch_gptj import decode_kernel

    assert set(decode_kernel.TILES) == {"triton", "triton-64x3w8", "triton-32x3w8"}


@pytest.mark.parametrize(("head_dim", "dtype"), [(96, "fp16"), (256, "bf16")])
def test_other_heads_and_bf16_compile(head_dim: int, dtype: str) -> None:
    from mlperf_harness.engines.torch_gptj import decode_kernel

    tiles = decode_kernel.TILES["triton"]
    types, constants, aligned = attention_form(tiles.block_n, 2, head_dim, dtype)
    compiled = compile_for_hopper(
        decode_kernel.decode_attention_kernel, types, constants, aligned, num_warps=tiles.warps
    )
    assert "mma.sync.aligned" in compiled.asm["ptx"]


def test_the_splits_combine_compiles() -> None:
    from mlperf_harness.engines.torch_gptj import decode_kernel

    types = dict.fromkeys(PARTS, "*fp32") | {"out_ptr": "*fp16"}
    constants = {"HEADS": 16, "BEAMS": 4, "ROWS": 4, "HEAD_DIM": 256, "DIMS": 256, "SPLITS": 4}
    compiled = compile_for_hopper(
        decode_kernel.combine_splits_kernel, types, constants, (*PARTS, "out_ptr"), num_warps=4
    )
    assert "ex2.approx" in compiled.asm["ptx"]  # the splits' weights
