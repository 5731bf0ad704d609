"""The torch Llama engine's decode attention kernels (decode_kernel.py, attention "fp8kernel") on the
CPU: under Triton's interpreter against the engine's reference for them on awkward shapes, and in the
tiny Llama's engine decoding to the NumPy model's tokens (llama_interpreted_attention.py, in a
process of its own with TRITON_INTERPRET=1); compiled for Hopper (sm_90), what a GPU would be given;
how many chunks split-K cuts rows into. Skipped where torch or triton is not installed (CI); the GPU
runs them in device_profile.py's variants and device_check.py's float32 equality."""

from __future__ import annotations

import pytest
from hopper_compile import hopper_ptx
from torch_needed import needs_torch_and_triton
from triton_interpreter import run_interpreted

pytestmark = needs_torch_and_triton


def _interpreted(*argv: str) -> str:
    import llama_interpreted_attention

    return run_interpreted(llama_interpreted_attention.__file__, 600, *argv)


def test_the_kernels_compute_what_the_engine_s_reference_does() -> None:
    out = _interpreted()
    assert out.count("equal to the reference") == 11 and "DIFFER" not in out


@pytest.mark.slow  # about 5 minutes on a 2-core CPU: the interpreter runs every program in Python
def test_the_engine_decodes_as_the_numpy_model_with_the_kernel_interpreted() -> None:
    out = _interpreted("engine")
    assert out.count("equal to NumPy's") == 3 and "DIFFER" not in out


def test_rows_split_over_their_keys_only_where_too_few_fill_the_gpu() -> None:
    from mlperf_harness.engines.torch_llama.decode_kernel import SPLIT_KEYS, split_count

    sms = 2 * 132  # an H200's 132 SMs, two programs each
    assert split_count(173, 8, 2048, sms) == 1  # a full engine: 1,384 programs already
    assert split_count(33, 8, 2048, sms) == 1  # 264: enough
    assert split_count(16, 8, 2048, sms) == 3  # 128 programs: 3 chunks of 683 keys
    assert split_count(1, 8, 2048, sms) == 2048 // SPLIT_KEYS  # no chunk under SPLIT_KEYS
    assert split_count(1, 8, 256, sms) == 1  # too short to split
    assert split_count(2, 2, 148, 16, least=16) == 4


def _decode_form(dtype: str, fp8: bool, splits: int) -> str:
    """The PTX of decode_kernel for Llama-2-70B on one GPU: 64 query heads over 8 key/value heads
    of 128, a cache of 2,048 positions; the model's dtype `dtype`."""
    from mlperf_harness.engines.torch_llama import decode_kernel

    pointers = ("q_ptr", "k_ptr", "v_ptr", "rows_ptr", "last_ptr", "out_ptr", "part_ptr")
    cache = "*u8" if fp8 else f"*{dtype}"
    types = {"q_ptr": f"*{dtype}", "k_ptr": cache, "v_ptr": cache, "out_ptr": f"*{dtype}"}
    types |= {"rows_ptr": "*i64", "last_ptr": "*i64", "part_ptr": "*fp32", "stats_ptr": "*fp32"}
    types |= {"q_scale": "fp32", "v_scale": "fp32"}
    types |= dict.fromkeys(("q_row_stride", "q_head_stride", "cache_length", "chunk"), "i32")
    constants = {"KV_HEADS": 8, "GROUP": 8, "GROUP_PAD": 16, "DIM": 128, "DIM_PAD": 128}
    constants |= {"FP8": fp8, "IEEE": dtype == "fp32", "SPLITS": splits}
    constants |= {"BLOCK_N": decode_kernel.BLOCK_N}
    aligned = (*pointers, "stats_ptr", "q_row_stride", "q_head_stride", "cache_length", "chunk")
    return hopper_ptx(
        decode_kernel.decode_kernel, types, constants, aligned,
        num_warps=decode_kernel.WARPS, num_stages=decode_kernel.STAGES,
    )  # fmt: skip


@pytest.mark.parametrize("splits", [1, 4])
def test_the_kernel_converts_fp8_in_registers_into_tensor_core_products(splits: int) -> None:
    ptx = _decode_form("bf16", True, splits)
    assert "cvt.rn.f16x2.e4m3x2" in ptx  # the cache's bytes widened in registers (then to bf16)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx  # tensor-core products
    assert "cp.async" in ptx  # the keys' and values' loads pipelined (STAGES)
    assert "ex2.approx" in ptx  # the online softmax's exp2


def test_the_kernel_compiles_for_fp16_and_a_float32_cache() -> None:
    assert "mma.sync" in _decode_form("fp16", True, 1)
    assert "ld.global" in _decode_form("fp32", False, 1)  # products in IEEE float32: no TF32


def test_the_split_combine_compiles() -> None:
    from mlperf_harness.engines.torch_llama import decode_kernel

    types = {"part_ptr": "*fp32", "stats_ptr": "*fp32", "out_ptr": "*bf16", "v_scale": "fp32"}
    constants = {"SPLITS": 4, "SPLITS_PAD": 4, "DIM": 128, "DIM_PAD": 128}
    ptx = hopper_ptx(
        decode_kernel.combine_kernel, types, constants, ("part_ptr", "stats_ptr", "out_ptr"),
        num_warps=decode_kernel.WARPS,
    )  # fmt: skip
    assert "ex2.approx" in ptx and "div" in ptx
