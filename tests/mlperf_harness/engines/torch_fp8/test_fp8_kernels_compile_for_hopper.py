"""The FP8 engine's Triton kernels compiled for Hopper (sm_90) on this CPU: Triton's compiler and
ptxas need no GPU. Where the interpreter checks what a kernel computes (test_fp8_kernels_interpreted),
this checks what the GPU would be given: every form compiles, the GEMMs use Hopper's asynchronous
tensor-core instructions (wgmma), the TMA forms move their tiles with bulk tensor copies, and the
fused stem pipelines its input in copies as wide as its design says.
Skipped where torch or triton is not installed (CI)."""

from __future__ import annotations

import importlib.util
import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hopper_compile import compile_for_hopper, hopper_ptx
from torch_needed import needs_torch_and_triton

pytestmark = needs_torch_and_triton

FLAGS = {"HAS_RES": True, "RES_E4M3": True, "RELU": True, "STORE16": False, "STORE8": True}


def gathering_input_pass() -> tuple[Any, dict[str, str], dict[str, Any]]:
    """(kernel, types, constants) of the input pass as the runner's gathering graph runs it."""
    from mlperf_harness.engines.torch_fp8 import input_kernel

    types = {"x_ptr": "*fp32", "rows_ptr": "*i64", "y_ptr": "*fp16", "M": "i32", "HW": "i32"}
    constants = {"C": 3, "C_OUT": 4, "BLOCK_C": 4, "BLOCK_M": input_kernel.BLOCK_M, "GATHER": True}
    return input_kernel.nhwc_half_kernel, types, constants


# A kernel as a launch compiles it: (kernel, types, constants, the arguments a launch finds
# divisible by 16 (each layer's pointers and channel counts), compile options).
KernelForm = tuple[Any, dict[str, str], dict[str, Any], tuple[str, ...], dict[str, int]]


def pointer_3x3_form() -> KernelForm:
    """The pointer kernel on a 3x3 layer of 128 channels, no residual."""
    from mlperf_harness.engines.torch_fp8 import conv_kernel

    pointers = ("x_ptr", "w_ptr", "res_ptr", "y8_ptr", "alpha_ptr", "bias_ptr", "y16_ptr")
    types = dict.fromkeys(("x_ptr", "w_ptr", "res_ptr", "y8_ptr"), "*u8")
    types |= {"alpha_ptr": "*fp32", "bias_ptr": "*fp32", "y16_ptr": "*fp16"}
    types |= dict.fromkeys(("in_scale", "res_scale", "out8_scale"), "fp32")
    types |= dict.fromkeys(("M", "H", "W", "C", "P", "Q", "K", "stride", "pad_h", "pad_w"), "i32")
    constants = {"R": 3, "S": 3, "POINTWISE": False, "A_FP16": False, **FLAGS, "RES_E4M3": False}
    constants |= {"HAS_RES": False, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
    constants |= {"PREFETCH": False}
    options = {"num_warps": 4, "num_stages": 4}
    return conv_kernel.conv_fp8_kernel, types, constants, (*pointers, "C", "K"), options


def tma_gemm_form(persistent: bool, fp16_input: bool = False) -> KernelForm:
    """The 1x1 layers' TMA GEMM, tiles of 128 x 64 by 64 channels; reading e4m3, or fp16 quantized
    as it loads (A_FP16)."""
    from mlperf_harness.engines.torch_fp8 import pointwise_kernel

    block_m, block_n, block_k = 128, 64, 64
    types = {
        "x_desc": f"tensordesc<{'fp16' if fp16_input else 'fp8e4nv'}[{block_m}, {block_k}]>",
        "w_desc": f"tensordesc<fp8e4nv[{block_n}, {block_k}]>",
        "alpha_ptr": "*fp32",
        "bias_ptr": "*fp32",
        **dict.fromkeys(
            ("res_desc", "y16_desc", "y8_desc"), f"tensordesc<fp8e4nv[{block_m}, {block_n}]>"
        ),
        "res_scale": "fp32",
        "out8_scale": "fp32",
        "in_scale": "fp32",
        **dict.fromkeys(("M", "C", "K"), "i32"),
    }
    constants = {**FLAGS, "BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k}
    constants |= {"A_FP16": fp16_input}
    constants |= {"GROUP_M": 8, "PREFETCH": False, "PERSISTENT": persistent}
    aligned = ("alpha_ptr", "bias_ptr", "C", "K")
    options = {"num_warps": 4, "num_stages": 3}
    return pointwise_kernel.pointwise_fp8_kernel, types, constants, aligned, options


def tma_implicit_gemm_form(persistent: bool) -> KernelForm:
    """The 3x3 layers' TMA implicit GEMM, blocks of 16 x 8 pixels by 128 channels."""
    from mlperf_harness.engines.torch_fp8 import spatial_kernel

    bh, bw, block_n, block_k = 16, 8, 128, 64
    pixels = f"tensordesc<fp8e4nv[1, {bh}, {bw}, {block_n}]>"
    types = {
        "x_desc": f"tensordesc<fp8e4nv[1, {bh}, {bw}, {block_k}]>",
        "w_desc": f"tensordesc<fp8e4nv[{block_n}, {block_k}]>",
        "alpha_ptr": "*fp32",
        "bias_ptr": "*fp32",
        **dict.fromkeys(("res_desc", "y16_desc", "y8_desc"), pixels),
        "res_scale": "fp32",
        "out8_scale": "fp32",
        **dict.fromkeys(("N", "P", "Q", "C", "K", "pad_h", "pad_w"), "i32"),
    }
    constants = {"R": 3, "S": 3, **FLAGS, "BH": bh, "BW": bw, "BLOCK_N": block_n}
    constants |= {"BLOCK_K": block_k, "GROUP_M": 8, "PERSISTENT": persistent}
    aligned = ("alpha_ptr", "bias_ptr", "C", "K")
    options = {"num_warps": 4, "num_stages": 4}
    return spatial_kernel.spatial_fp8_kernel, types, constants, aligned, options


def fused_stem_form(wide: bool) -> KernelForm:
    """ResNet-50's stem at batch 256 (224 x 224, 7x7 -> 64) in tiles of 7 x 8 pooled pixels."""
    from mlperf_harness.engines.torch_fp8 import stem_pool_kernel as kernel

    pointers = ("x_ptr", "w_ptr", "bias_ptr", "scratch_ptr", "y8_ptr")
    types = {"x_ptr": "*fp16", "w_ptr": "*fp16", "bias_ptr": "*fp32", "scratch_ptr": "*u8"}
    types |= {"y8_ptr": "*u8", "out8_scale": "fp32"}
    types |= dict.fromkeys(("N", "H", "W", "P", "Q", "PO", "QO"), "i32")
    constants = {"C": 4, "K": 64, "R": 7, "S": 7, "PAD_H": 3, "PAD_W": 3, "PAIRS": wide}
    constants |= {"POOL_PAD_H": 1, "POOL_PAD_W": 1}
    constants |= {"TILE_P": 7, "TILE_Q": 8, "BLOCK_M": kernel.block_m(7, 8)}
    constants |= {"POOL_M": kernel.pool_m(7, 8), "BLOCK_K": kernel.block_k(7, 3, 4)}
    assert (constants["BLOCK_M"], constants["POOL_M"], constants["BLOCK_K"]) == (256, 64, 32)
    aligned = (*pointers, "N", "H", "W", "P", "Q")  # 256, 224, 224, 112, 112
    return kernel.stem_pool_kernel, types, constants, aligned, {"num_warps": 4, "num_stages": 3}


def form_ptx(form: KernelForm) -> str:
    kernel, types, constants, aligned, options = form
    return hopper_ptx(kernel, types, constants, aligned, **options)


def test_the_pointer_kernel_s_3x3_form_runs_on_hopper_tensor_cores() -> None:
    ptx = form_ptx(pointer_3x3_form())
    assert "wgmma.mma_async" in ptx and "e4m3" in ptx


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("fp16_input", [False, True])
def test_the_tma_gemm_moves_tiles_in_bulk_to_hopper_tensor_cores(
    persistent: bool, fp16_input: bool
) -> None:
    ptx = form_ptx(tma_gemm_form(persistent, fp16_input))
    assert "wgmma.mma_async" in ptx and "e4m3" in ptx
    assert "cp.async.bulk.tensor" in ptx  # TMA loads of the operands and the residual, TMA stores
    if fp16_input:  # the fp16 tile quantized in registers: e4m3 products all the same
        assert "cvt.rn.satfinite.e4m3x2.f32" in ptx and ".e4m3.e4m3" in ptx


@pytest.mark.parametrize("persistent", [False, True])
def test_the_tma_implicit_gemm_moves_4d_tiles_in_bulk_to_hopper_tensor_cores(
    persistent: bool,
) -> None:
    ptx = form_ptx(tma_implicit_gemm_form(persistent))
    assert "wgmma.mma_async" in ptx and "e4m3" in ptx
    assert "cp.async.bulk.tensor.4d" in ptx  # the input's 4-D tiles, the residual and the result


@pytest.mark.parametrize("wide", [True, False])
def test_the_fused_stem_pipelines_its_input_into_hopper_tensor_cores(wide: bool) -> None:
    """fp16 wgmma fed by asynchronous copies of the input (pipelined: cp.async), 16 bytes each
    when wide (masks by pairs of columns, the run's first column known even), 8 otherwise; and the
    barriers around the pool's scratch slot."""
    from mlperf_harness.engines.torch_fp8 import plan, stem_pool_kernel

    # The pattern the planner fuses is the one the kernel computes.
    assert stem_pool_kernel.STRIDE.value == plan.STEM_STRIDE
    assert (stem_pool_kernel.POOL.value, stem_pool_kernel.POOL_STRIDE.value) == plan.STEM_POOL
    ptx = form_ptx(fused_stem_form(wide))
    assert "wgmma.mma_async" in ptx and ".f16.f16" in ptx
    copies = re.findall(
        r"cp\.async\.c[ag]\.shared\.global \[[^]]*\], \[[^]]*\], (0x[0-9a-f]+)", ptx
    )
    sizes = {int(size, 16) for size in copies}
    # The input's 16-byte copies (wide), or 8-byte ones; the weights' are 8 bytes either way.
    assert sizes == ({16, 8} if wide else {8})
    assert ptx.count("bar.sync") >= 2


@pytest.mark.parametrize(
    "form",
    [pointer_3x3_form, partial(tma_gemm_form, True), partial(tma_implicit_gemm_form, True),
     partial(fused_stem_form, True)],
    ids=["pointer kernel", "TMA GEMM", "TMA implicit GEMM", "fused stem"],
)  # fmt: skip
def test_every_batch_size_shares_one_compile_of_each_kernel(form: Any) -> None:
    """The argument a batch size changes (BATCH_ARGUMENTS) is not specialised on, so the engines
    of a ladder share each compile (conv_kernel.py): and that costs nothing, the PTX being the
    same whether the compiler knows it divisible by 16 or not."""
    import inspect

    kernel, types, constants, aligned, options = form()
    (batch_argument,) = inspect.getmodule(kernel.fn).BATCH_ARGUMENTS  # type: ignore[union-attr]
    assert kernel.params[kernel.arg_names.index(batch_argument)].do_not_specialize
    rest = tuple(name for name in aligned if name != batch_argument)
    known = hopper_ptx(kernel, types, constants, (*rest, batch_argument), **options)
    assert known == hopper_ptx(kernel, types, constants, rest, **options)


def test_the_max_pool_compiles_with_its_padding_by_side() -> None:
    """The stem's pool (3x3, stride 2) with its bias and relu, storing e4m3: its padding before the
    first row and column are arguments of their own (TensorFlow's SAME pooling pads after only)."""
    from mlperf_harness.engines.torch_fp8 import pool_kernel

    types = {"x_ptr": "*fp16", "y16_ptr": "*fp16", "y8_ptr": "*u8", "bias_ptr": "*fp32"}
    types |= {"out8_scale": "fp32"}
    types |= dict.fromkeys(("M", "H", "W", "C", "P", "Q", "stride", "pad_h", "pad_w"), "i32")
    constants = {"KERNEL": 3, "BIAS": True, "RELU": True, "STORE16": False}
    constants |= {"BLOCK_M": pool_kernel.BLOCK_M, "BLOCK_C": pool_kernel.BLOCK_C}
    ptx = hopper_ptx(pool_kernel.max_pool_kernel, types, constants, num_warps=pool_kernel.WARPS)
    assert "max.f32" in ptx  # the window's maximum (and the relu)
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx  # the e4m3 store


def test_the_gathering_input_pass_compiles() -> None:
    from mlperf_harness.engines.torch_fp8 import input_kernel

    ptx = hopper_ptx(*gathering_input_pass(), num_warps=input_kernel.WARPS)
    assert "ld.global" in ptx and "cvt.rn.f16" in ptx  # f16.f32, or f16x2.f32 (Triton 3.6)


def test_a_build_forgets_every_kernel_the_engine_launches() -> None:
    """build.py runs the engine from the shared cache to learn which kernels to copy, then from its
    own cache: a kernel forget_compiled_kernels missed would stay in memory, so it would be neither
    copied nor compiled into the engine's cache, and every host loading the engine would compile
    it again."""
    import pkgutil

    from triton.runtime.jit import JITFunction  # type: ignore[import-not-found]  # pants: no-infer-dep

    from mlperf_harness.engines import torch_fp8
    from mlperf_harness.engines.torch_fp8 import ops

    kernel_modules = [
        importlib.import_module(f"{torch_fp8.__name__}.{info.name}")  # pants: no-infer-dep
        for info in pkgutil.iter_modules(torch_fp8.__path__)
        if info.name.endswith("_kernel")
    ]
    defined = {
        value
        for module in kernel_modules
        for name, value in vars(module).items()
        if isinstance(value, JITFunction) and name.endswith("_kernel")
    }
    assert len(defined) == 6 and set(ops.KERNELS) == defined
    for kernel in ops.KERNELS:  # what a launch leaves: a device's compiled kernels (no GPU here)
        kernel.device_caches[0] = ({"specialisation": "compiled"}, {}, None, None, None)
    ops.forget_compiled_kernels()
    assert all(not kernel.device_caches for kernel in ops.KERNELS)


def test_an_engine_s_kernels_are_copied_from_the_shared_cache_not_compiled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """build.py: a kernel compiled into the tuning cache, its directory copied into the engine's
    cache, is found there by Triton (the same key), so the engine's cache gains no new compile."""
    from mlperf_harness.engines.torch_fp8 import exported, ops

    kernel, types, constants = gathering_input_pass()

    def compile_in(cache: Path) -> Any:
        monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
        return compile_for_hopper(kernel, types, constants)

    shared, own = tmp_path / "shared", tmp_path / "engine" / exported.TRITON_CACHE
    compiled = compile_in(shared)
    # What a launch leaves in the JIT's memory (no GPU here to launch it).
    monkeypatch.setitem(kernel.device_caches, 0, ({"key": compiled}, {}, None, None, None))
    directories = ops.compiled_kernel_dirs()
    assert [directory.parent for directory in directories] == [shared]
    assert exported.copy_kernels([tmp_path / "gone", *directories], own) == 1  # gone: left out
    assert exported.copy_kernels(directories, own) == 0  # already there
    copied = sorted(path.name for path in own.iterdir())
    again = compile_in(own)
    assert sorted(path.name for path in own.iterdir()) == copied  # found, not compiled anew
    assert again.hash == compiled.hash and again.asm["cubin"] == compiled.asm["cubin"]
