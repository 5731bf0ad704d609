"""The FP8 convolution and quantization as torch operators that torch.export and AOTInductor see.

`mlperf_fp8::conv` is a `torch.library.triton_op`: AOTInductor compiles its Triton kernel into the
engine package, and its body (output allocation, launch) also gives export the output shapes. On the
CPU the same operator runs a reference that dequantizes and convolves in fp32: tests and the
fake-quant accuracy evaluation use it, and it defines what the kernel must compute. The max pool
(`mlperf_fp8::max_pool`), the fused stem (`mlperf_fp8::stem_pool`, run either way by `run_stem`) and
the input pass (`mlperf_fp8::nhwc_half`) are operators of the same kind.

Tensors are NCHW in shape and channels-last in memory (the engine's layout), so that a permute to
NHWC is a view: the kernel reads and writes NHWC. e4m3 tensors are passed as their bits in uint8
(BITS; conv_kernel.py says why): `as_bits` and `from_bits` convert.

Imports torch and triton: GPU hosts and the development environment only.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
import torch.nn.functional as F  # type: ignore[import-not-found]  # pants: no-infer-dep
from torch.library import triton_op, wrap_triton  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_fp8 import (
    conv_kernel,
    input_kernel,
    pointwise_kernel,
    pool_kernel,
    spatial_kernel,
    stem_pool_kernel,
)
from mlperf_harness.engines.torch_fp8.scales import E4M3_MAX

E4M3 = torch.float8_e4m3fn
BITS = torch.uint8  # how e4m3 tensors cross the compiled graph


def as_bits(x: torch.Tensor) -> torch.Tensor:
    return x.to(E4M3).view(BITS)


def from_bits(x: torch.Tensor) -> torch.Tensor:
    return x.view(E4M3)


@dataclass(frozen=True)
class IntFields:
    """A choice of the tuning as the engine keeps it: a list of its int fields in declaration order
    (the custom ops take lists, tuning.json records them), read back with defaults for fields a
    shorter list from an earlier build lacks."""

    def as_list(self) -> list[int]:
        return [int(getattr(self, field.name)) for field in fields(self)]

    @classmethod
    def from_list(cls, values: Sequence[int]) -> Self:
        return cls(*(int(v) for v in values))


@dataclass(frozen=True)
class KernelConfig(IntFields):
    """One tiling of the kernel: what the build-time tuning chooses per layer."""

    block_m: int
    block_n: int
    block_k: int
    warps: int
    stages: int
    group_m: int = 8
    prefetch: int = 0  # 1: the epilogue's loads issued before the reduction loop (conv_kernel.py)
    tma: int = 0  # 1: a 1x1 layer run as a GEMM through TMA descriptors (pointwise_kernel.py)
    # With tma: that many programs per SM, each looping over tiles (PERSISTENT, either TMA kernel);
    # 0: one a tile.
    persistent: int = 0
    # With tma: a 3x3 (any R x S) layer of stride 1 run by spatial_kernel.py, its rows a block of
    # block_m // tile_w x tile_w output pixels; 0: the 1x1 GEMM (pointwise_kernel.py).
    tile_w: int = 0

    def fits(self, channels: int) -> bool:
        """A reduction block must divide the input channels (a block never spans two taps)."""
        return channels % self.block_k == 0 and (not self.tile_w or self.block_m % self.tile_w == 0)


# Every Triton kernel the engine launches.
KERNELS = (
    conv_kernel.conv_fp8_kernel,
    input_kernel.nhwc_half_kernel,
    pointwise_kernel.pointwise_fp8_kernel,
    pool_kernel.max_pool_kernel,
    spatial_kernel.spatial_fp8_kernel,
    stem_pool_kernel.stem_pool_kernel,
)


def compiled_kernel_dirs() -> set[Path]:
    """The Triton cache directories of the kernels this process holds compiled (Triton keeps each
    compiled kernel's files in one directory of its cache, named by the kernel's key)."""
    found: set[Path] = set()
    for kernel in KERNELS:
        for device_cache in kernel.device_caches.values():
            for compiled in device_cache[0].values():  # (compiled kernels by specialisation, ...)
                found.update(Path(file).parent for file in compiled.metadata_group.values())
    return found


def forget_compiled_kernels() -> None:
    """Drop the kernels this process compiled (Triton keeps them in memory by specialisation), so
    the next launch of each looks in, or compiles into, the Triton cache set now (build.py)."""
    for kernel in KERNELS:
        kernel.device_caches.clear()


def is_pointwise(kernel: Sequence[int], stride: int, pads: Sequence[int]) -> bool:
    """A 1x1 convolution of stride 1 and no padding: a GEMM of the NHWC input as it lies."""
    return tuple(kernel) == (1, 1) and stride == 1 and not any(pads)


def runs_spatial(kernel: Sequence[int], stride: int, pads: Sequence[int]) -> bool:
    """Whether spatial_kernel.py runs the convolution: any of stride 1, and a strided 1x1 one
    without padding (it reads every stride-th pixel: a strided view of the input)."""
    return stride == 1 or (tuple(kernel) == (1, 1) and not any(pads))


POINTWISE, SPATIAL = "pointwise", "spatial"  # the TMA kernels (tma_kernel)


def tma_kernel(
    kernel: Sequence[int], stride: int, pads: Sequence[int], input_fp16: bool
) -> str | None:
    """The TMA kernel that runs a convolution, if one does: POINTWISE (pointwise_kernel.py) for a
    1x1 of stride 1, reading e4m3 or fp16 (quantized as it loads); SPATIAL (spatial_kernel.py) for
    another one runs_spatial takes reading e4m3; None for the rest. Tuning tries that kernel's
    tilings on the layer (tuning.candidates_for), device_check checks its forms."""
    if is_pointwise(kernel, stride, pads):
        return POINTWISE
    if input_fp16:
        return None
    return SPATIAL if runs_spatial(kernel, stride, pads) else None


def output_size(size: int, kernel: int, stride: int, begin: int, end: int) -> int:
    return (size + begin + end - kernel) // stride + 1


def output_shape(
    input_shape: Sequence[int], weight_shape: Sequence[int], stride: int, pads: Sequence[int]
) -> tuple[int, int, int, int]:
    """(N, K, P, Q) of a convolution of an (N, C, H, W) input by [K, R, S, C] weights."""
    n, _, h, w = (int(d) for d in input_shape)
    k, r, s, _ = (int(d) for d in weight_shape)
    return (
        n,
        k,
        output_size(h, r, stride, pads[0], pads[2]),
        output_size(w, s, stride, pads[1], pads[3]),
    )


def quantize(x: torch.Tensor, scale: float) -> torch.Tensor:
    """x / its e4m3 scale (`scale` is the inverse), saturated, as e4m3 bits (the reference's form
    of what the kernel does in its epilogue and, for an fp16 input, as it loads)."""
    return as_bits((x.float() * scale).clamp(-E4M3_MAX, E4M3_MAX))


def _outputs(
    x8: torch.Tensor,
    w8: torch.Tensor,
    stride: int,
    pads: Sequence[int],
    store16: bool,
    store8: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    shape = output_shape(x8.shape, w8.shape, stride, pads)
    return _result(x8, shape, torch.float16, store16), _result(x8, shape, BITS, store8)


def _result(
    like: torch.Tensor, shape: Sequence[int], dtype: torch.dtype, wanted: bool
) -> torch.Tensor:
    """An operator's output: channels-last `shape` on `like`'s device, or empty when not stored."""
    if not wanted:
        return like.new_empty((0,), dtype=dtype)
    return torch.empty(shape, dtype=dtype, device=like.device, memory_format=torch.channels_last)


@triton_op("mlperf_fp8::conv", mutates_args=())  # type: ignore[untyped-decorator]
def conv(
    x8: torch.Tensor,
    w8: torch.Tensor,
    alpha: torch.Tensor,
    bias: torch.Tensor,
    residual: torch.Tensor | None,
    stride: int,
    pads: list[int],
    relu: bool,
    in_scale: float,
    res_scale: float,
    out8_scale: float,
    store16: bool,
    store8: bool,
    config: list[int],
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fp16 result or empty, e4m3 bits or empty) of one fused FP8 convolution (plan.Fp8ConvLayer).
    `x8` is e4m3 bits, or fp16 quantized on load with `in_scale` (1 / its scale); `w8` e4m3 bits;
    `residual` fp16, or e4m3 bits dequantized with `res_scale` (its scale)."""
    y16, y8 = _outputs(x8, w8, stride, pads, store16, store8)
    _, c, h, w = x8.shape
    _, r, s, _ = w8.shape
    n, k, p, q = output_shape(x8.shape, w8.shape, stride, pads)
    m = n * p * q
    tiles = KernelConfig.from_list(config)
    pointwise = is_pointwise((r, s), stride, pads)
    if tiles.tma:
        spatial = bool(tiles.tile_w) and x8.dtype == BITS and runs_spatial((r, s), stride, pads)
        if not (spatial or (pointwise and not tiles.tile_w)):
            raise ValueError(
                "the TMA kernels run 1x1 convolutions of stride 1 or, with tile_w, convolutions "
                "of stride 1 and strided 1x1 ones reading e4m3"
            )
        layer = _TmaLayer(
            x8,
            w8,
            alpha,
            bias,
            residual,
            stride,
            pads,
            in_scale,
            res_scale,
            out8_scale,
            relu,
            y16,
            y8,
        )
        (_spatial if tiles.tile_w else _pointwise)(layer, tiles)
        return y16, y8
    wrap_triton(conv_kernel.conv_fp8_kernel)[
        (conv_kernel.grid_size(m, k, tiles.block_m, tiles.block_n),)
    ](
        x8,
        w8,
        alpha,
        bias,
        # An output not stored is no kernel argument: an allocation the kernel never writes lets
        # the compiler skip copying it (the unused pointers get alpha, which is never written).
        residual if residual is not None else alpha,
        y16 if store16 else alpha,
        y8 if store8 else alpha,
        in_scale,
        res_scale,
        out8_scale,
        m,
        h,
        w,
        c,
        p,
        q,
        k,
        stride,
        pads[0],
        pads[1],
        R=r,
        S=s,
        POINTWISE=pointwise,
        A_FP16=x8.dtype == torch.float16,
        **_epilogue_flags(residual, relu, store16, store8),
        BLOCK_M=tiles.block_m,
        BLOCK_N=tiles.block_n,
        BLOCK_K=tiles.block_k,
        GROUP_M=tiles.group_m,
        PREFETCH=bool(tiles.prefetch),
        num_warps=tiles.warps,
        num_stages=tiles.stages,
    )
    return y16, y8


def _tma(view: torch.Tensor, block: list[int]) -> Any:
    """A TMA descriptor of `view` (e4m3 bits seen as e4m3) in blocks of `block`."""
    from triton.tools.tensor_descriptor import TensorDescriptor  # type: ignore[import-not-found]  # pants: no-infer-dep

    return TensorDescriptor.from_tensor(from_bits(view) if view.dtype == BITS else view, block)


def _described(t: torch.Tensor, block: list[int], rows: int = 0, stride: int = 1) -> Any:
    """A TMA descriptor of a channels-last tensor's NHWC memory: 4-D [N, H, W, C] (every
    `stride`-th row and column of it), or with `rows` the matrix [rows, C] (a view either way,
    no copy)."""
    view = t.permute(0, 2, 3, 1)
    if stride > 1:
        view = view[:, ::stride, ::stride]
    if rows:
        view = view.reshape(rows, t.shape[1])
    return _tma(view, block)


@dataclass(frozen=True)
class _TmaLayer:
    """One FP8 convolution's tensors and epilogue, as a TMA kernel launch takes them."""

    x8: torch.Tensor
    w8: torch.Tensor
    alpha: torch.Tensor
    bias: torch.Tensor
    residual: torch.Tensor | None
    stride: int
    pads: list[int]
    in_scale: float  # 1 / the input's e4m3 scale, for an fp16 input (pointwise_kernel's A_FP16)
    res_scale: float
    out8_scale: float
    relu: bool
    y16: torch.Tensor  # empty when not stored
    y8: torch.Tensor  # empty when not stored

    def descriptors(
        self, x_block: list[int], w_block: list[int], out_block: list[int], rows: int = 0
    ) -> list[Any]:
        """The kernels' first seven arguments: the input, the weights, alpha, bias, the residual
        and both outputs (an unused descriptor gets a stored output's: the kernel never touches
        it); `rows`: matrices of that many rows, else 4-D."""
        stored = _described(self.y16 if self.y16.numel() else self.y8, out_block, rows)

        def output(t: torch.Tensor | None) -> Any:
            return _described(t, out_block, rows) if t is not None and t.numel() else stored

        x = _described(self.x8, x_block, rows, self.stride)
        weights = _tma(self.w8.reshape(self.w8.shape[0], -1), w_block)  # [K, R*S*C]
        return [
            x,
            weights,
            self.alpha,
            self.bias,
            output(self.residual),
            output(self.y16),
            output(self.y8),
        ]

    def epilogue_flags(self) -> dict[str, bool]:
        return _epilogue_flags(self.residual, self.relu, self.y16.numel() > 0, self.y8.numel() > 0)

    def programs(self, tiles: KernelConfig) -> int:
        """The most programs a launch of `tiles` makes (the kernels' grid_size): `persistent` per
        SM of the layer's GPU; 0, one a tile."""
        return tiles.persistent * _multiprocessors(self.x8.device) if tiles.persistent else 0


def _epilogue_flags(
    residual: torch.Tensor | None, relu: bool, store16: bool, store8: bool
) -> dict[str, bool]:
    """The epilogue's constexpr flags, as every FP8 convolution kernel takes them."""
    return {
        "HAS_RES": residual is not None,
        "RES_E4M3": residual is not None and residual.dtype == BITS,
        "RELU": relu,
        "STORE16": store16,
        "STORE8": store8,
    }


def _pointwise(layer: _TmaLayer, tiles: KernelConfig) -> None:
    """Launch pointwise_kernel.py on the layer's NHWC tensors seen as matrices: the input [M, C],
    the weights [K, C], the residual and the outputs [M, K]."""
    n, c, h, w = layer.x8.shape
    k = layer.w8.shape[0]
    m = n * h * w
    bm, bn, bk = tiles.block_m, tiles.block_n, tiles.block_k
    wrap_triton(pointwise_kernel.pointwise_fp8_kernel)[
        (pointwise_kernel.grid_size(m, k, bm, bn, layer.programs(tiles)),)
    ](
        *layer.descriptors([bm, bk], [bn, bk], [bm, bn], m),
        layer.res_scale,
        layer.out8_scale,
        layer.in_scale,
        m,
        c,
        k,
        A_FP16=layer.x8.dtype == torch.float16,
        **layer.epilogue_flags(),
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP_M=tiles.group_m,
        PREFETCH=bool(tiles.prefetch),
        PERSISTENT=bool(tiles.persistent),
        num_warps=tiles.warps,
        num_stages=tiles.stages,
    )


def _spatial(layer: _TmaLayer, tiles: KernelConfig) -> None:
    """Launch spatial_kernel.py on the layer's NHWC tensors as 4-D [N, H, W, C] descriptors and
    the weights as the matrix [K, R*S*C]; a strided 1x1 layer reads the strided view of its input
    (runs_spatial)."""
    n, c, _, _ = layer.x8.shape
    k, r, s, _ = layer.w8.shape
    _, _, p, q = output_shape(layer.x8.shape, layer.w8.shape, layer.stride, layer.pads)
    bw = tiles.tile_w
    bh, bn, bk = tiles.block_m // bw, tiles.block_n, tiles.block_k
    wrap_triton(spatial_kernel.spatial_fp8_kernel)[
        (spatial_kernel.grid_size(n, p, q, k, bh, bw, bn, layer.programs(tiles)),)
    ](
        *layer.descriptors([1, bh, bw, bk], [bn, bk], [1, bh, bw, bn]),
        layer.res_scale,
        layer.out8_scale,
        n,
        p,
        q,
        c,
        k,
        layer.pads[0],
        layer.pads[1],
        R=r,
        S=s,
        **layer.epilogue_flags(),
        BH=bh,
        BW=bw,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP_M=tiles.group_m,
        PERSISTENT=bool(tiles.persistent),
        num_warps=tiles.warps,
        num_stages=tiles.stages,
    )


@functools.cache
def _multiprocessors(device: torch.device) -> int:
    if device.type != "cuda":
        return 1  # Triton's interpreter on the CPU (tests): each program takes several tiles
    return int(torch.cuda.get_device_properties(device).multi_processor_count)


def onnx_padded(x: torch.Tensor, pads: Sequence[int], value: float = 0.0) -> torch.Tensor:
    """`x` (NCHW) padded by ONNX's 2-D `pads` (top, left, bottom, right) with `value`."""
    return F.pad(x, [pads[1], pads[3], pads[0], pads[2]], value=value)


@conv.register_kernel("cpu")  # type: ignore[untyped-decorator]
def conv_reference(
    x8: torch.Tensor,
    w8: torch.Tensor,
    alpha: torch.Tensor,
    bias: torch.Tensor,
    residual: torch.Tensor | None,
    stride: int,
    pads: list[int],
    relu: bool,
    in_scale: float,
    res_scale: float,
    out8_scale: float,
    store16: bool,
    store8: bool,
    config: list[int],
) -> tuple[torch.Tensor, torch.Tensor]:
    """What the kernel computes, in fp32 on the CPU (the e4m3 products are exact in fp32)."""
    del config
    if x8.dtype != BITS:
        x8 = quantize(x8, in_scale)
    x = onnx_padded(from_bits(x8).float(), pads)
    y = F.conv2d(x, from_bits(w8).float().permute(0, 3, 1, 2), stride=stride)
    y = y * alpha.view(1, -1, 1, 1) + bias.view(1, -1, 1, 1)
    if residual is not None:
        y = y + (
            from_bits(residual).float() * res_scale if residual.dtype == BITS else residual.float()
        )
    if relu:
        y = torch.relu(y)
    y16, y8 = _outputs(x8, w8, stride, pads, store16, store8)
    if store16:
        y16.copy_(y.half())
    if store8:
        y8.copy_(quantize(y, out8_scale))
    return y16, y8


def pooled_size(h: int, w: int, kernel: int, stride: int, pads: Sequence[int]) -> tuple[int, int]:
    """A max pool's output rows and columns; `pads` (top, left, bottom, right), as ONNX's."""
    return (
        output_size(h, kernel, stride, pads[0], pads[2]),
        output_size(w, kernel, stride, pads[1], pads[3]),
    )


def pool_reference(x: torch.Tensor, kernel: int, stride: int, pads: Sequence[int]) -> torch.Tensor:
    """ONNX's max pool of `x` in fp32: the padding never wins (-inf), on any side."""
    return F.max_pool2d(onnx_padded(x.float(), pads, float("-inf")), kernel, stride)


def _pooled(
    x: torch.Tensor, kernel: int, stride: int, pads: Sequence[int], store16: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    n, c, h, w = x.shape
    shape = (n, c, *pooled_size(h, w, kernel, stride, pads))
    return _result(x, shape, torch.float16, store16), _result(x, shape, BITS, True)


@triton_op("mlperf_fp8::max_pool", mutates_args=())  # type: ignore[untyped-decorator]
def max_pool(
    x: torch.Tensor,
    kernel: int,
    stride: int,
    pads: list[int],
    relu: bool,
    out8_scale: float,
    store16: bool,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fp16 result or empty, e4m3 bits) of one fused max pool (plan.Fp8PoolLayer) of the fp16
    tensor `x` (NCHW shape, channels-last memory); `pads` (top, left, bottom, right); `bias`: fp32
    per channel, or empty for none."""
    y16, y8 = _pooled(x, kernel, stride, pads, store16)
    n, c, h, w = x.shape
    _, _, p, q = y8.shape
    m = n * p * q
    wrap_triton(pool_kernel.max_pool_kernel)[pool_kernel.grid(m, c)](
        x,
        y16 if store16 else y8,  # never written without STORE16
        y8,
        bias if bias.numel() else y8,  # never read without BIAS
        out8_scale,
        m,
        h,
        w,
        c,
        p,
        q,
        stride,
        pads[0],
        pads[1],
        KERNEL=kernel,
        BIAS=bool(bias.numel()),
        RELU=relu,
        STORE16=store16,
        BLOCK_M=pool_kernel.BLOCK_M,
        BLOCK_C=pool_kernel.BLOCK_C,
        num_warps=pool_kernel.WARPS,
    )
    return y16, y8


@max_pool.register_kernel("cpu")  # type: ignore[untyped-decorator]
def max_pool_reference(
    x: torch.Tensor,
    kernel: int,
    stride: int,
    pads: list[int],
    relu: bool,
    out8_scale: float,
    store16: bool,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """What the kernel computes (padding reads as -inf, as in the kernel)."""
    y = pool_reference(x, kernel, stride, pads)
    if bias.numel():
        y = (y + bias.view(1, -1, 1, 1)).half().float()
    if relu:
        y = torch.relu(y)
    y16, y8 = _pooled(x, kernel, stride, pads, store16)
    if store16:
        y16.copy_(y.half())
    y8.copy_(quantize(y, out8_scale))
    return y16, y8


@triton_op("mlperf_fp8::nhwc_half", mutates_args=())  # type: ignore[untyped-decorator]
def nhwc_half(x: torch.Tensor, channels: int, rows: torch.Tensor | None = None) -> torch.Tensor:
    """The fp32 NCHW input cast to fp16 in channels-last memory with `channels` channels (those
    past the input's are zeros), in one pass (input_kernel.py); with `rows` (int64), the images of
    `x` at those rows, gathered in the same pass."""
    x = x.contiguous()
    _, c, h, w = x.shape
    n = x.shape[0] if rows is None else rows.shape[0]
    # Allocated channels-last, not made so: `.contiguous(memory_format=...)` of a new NCHW tensor
    # copied it, 0.15 ms a batch of 256 on an H100, twice this pass (device_check profile).
    y = torch.empty(
        (n, channels, h, w), dtype=torch.float16, device=x.device, memory_format=torch.channels_last
    )
    m = n * h * w
    wrap_triton(input_kernel.nhwc_half_kernel)[input_kernel.grid(m)](
        x,
        x if rows is None else rows,  # never read without GATHER
        y,
        m,
        h * w,
        C=c,
        C_OUT=channels,
        BLOCK_C=input_kernel.channel_block(channels),
        BLOCK_M=input_kernel.BLOCK_M,
        GATHER=rows is not None,
        num_warps=input_kernel.WARPS,
    )
    return y


@nhwc_half.register_kernel("cpu")  # type: ignore[untyped-decorator]
def nhwc_half_reference(
    x: torch.Tensor, channels: int, rows: torch.Tensor | None = None
) -> torch.Tensor:
    """What the kernel computes: a gather, a cast (round to nearest), zero channels, a change of
    layout."""
    if rows is not None:
        x = x[rows]
    padded = F.pad(x.half(), (0, 0, 0, 0, 0, channels - x.shape[1]))
    return padded.contiguous(memory_format=torch.channels_last)


@dataclass(frozen=True)
class StemConfig(IntFields):
    """How the stem runs (plan.Fp8StemLayer), what the build-time tuning chooses: the fused kernel
    (stem_pool_kernel.py) on tiles of tile_p x tile_q pooled pixels, `persistent` programs per SM,
    its input in 16-byte copies at L2 (wide 1, on an even width) or 8-byte ones through L1; or, with
    tile_p 0 (UNFUSED_STEM), cuDNN's convolution then the max pool kernel, the path the engine
    took before the fused kernel."""

    tile_p: int
    tile_q: int
    warps: int
    stages: int
    persistent: int
    wide: int = 0

    @property
    def fused(self) -> bool:
        return self.tile_p > 0


UNFUSED_STEM = StemConfig(0, 0, 0, 0, 0)


def run_stem(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: torch.Tensor,
    pads: list[int],
    pool_pads: list[int],
    out8_scale: float,
    config: StemConfig,
) -> torch.Tensor:
    """The stem's pooled e4m3 bits the way `config` says (stem_pool's arguments): the module's
    handler and the tuning's timing both run it through here."""
    if config.fused:
        return stem_pool(x, w, bias, pads, pool_pads, out8_scale, config.as_list())
    if pads[0] != pads[2] or pads[1] != pads[3]:
        raise ValueError("the unfused stem takes symmetric padding only (plan.py fuses no other)")
    y = F.conv2d(x, w.permute(0, 3, 1, 2), None, stem_pool_kernel.STRIDE.value, (pads[0], pads[1]))
    _, y8 = max_pool(
        y,
        stem_pool_kernel.POOL.value,
        stem_pool_kernel.POOL_STRIDE.value,
        pool_pads,
        True,
        out8_scale,
        False,
        bias,
    )
    return y8


def _stem_output(
    x: torch.Tensor, w: torch.Tensor, pads: Sequence[int], pool_pads: Sequence[int]
) -> tuple[torch.Tensor, int, int]:
    """(the pooled e4m3 result, the convolution's output rows and columns)."""
    n, _, h, w_in = x.shape
    k, r, s, _ = w.shape
    p = output_size(h, r, stem_pool_kernel.STRIDE.value, pads[0], pads[2])
    q = output_size(w_in, s, stem_pool_kernel.STRIDE.value, pads[1], pads[3])
    window, stride = stem_pool_kernel.POOL.value, stem_pool_kernel.POOL_STRIDE.value
    shape = (n, k, *pooled_size(p, q, window, stride, pool_pads))
    return _result(x, shape, BITS, True), p, q


@triton_op("mlperf_fp8::stem_pool", mutates_args=())  # type: ignore[untyped-decorator]
def stem_pool(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: torch.Tensor,
    pads: list[int],
    pool_pads: list[int],
    out8_scale: float,
    config: list[int],
) -> torch.Tensor:
    """e4m3 bits of the fused stem (plan.Fp8StemLayer): the convolution of stride 2 of the fp16
    tensor `x` (NCHW shape, channels-last memory) by the fp16 weights `w` [K, R, S, C] with `pads`
    (top, left, bottom, right), plus `bias` (fp32 per channel), rounded to fp16, relu, the 3x3 max
    pool of stride 2 padded by `pool_pads` (0 or 1 a side), times out8_scale; `config`: a fused
    StemConfig's list."""
    y8, p, q = _stem_output(x, w, pads, pool_pads)
    n, c, h, w_in = x.shape
    k, r, s, _ = w.shape
    _, _, po, qo = y8.shape
    tiles = StemConfig.from_list(config)
    if not tiles.fused:
        raise ValueError("stem_pool runs the fused kernel: an unfused stem runs through run_stem")
    count = stem_pool_kernel.tiles(n, po, qo, tiles.tile_p, tiles.tile_q)
    programs = min(count, tiles.persistent * _multiprocessors(x.device))
    rows = stem_pool_kernel.block_m(tiles.tile_p, tiles.tile_q)
    scratch = torch.empty((programs, rows, k), dtype=BITS, device=x.device)
    wrap_triton(stem_pool_kernel.stem_pool_kernel)[(programs,)](
        x,
        w,
        bias,
        scratch,
        y8,
        out8_scale,
        n,
        h,
        w_in,
        p,
        q,
        po,
        qo,
        C=c,
        K=k,
        R=r,
        S=s,
        PAD_H=pads[0],
        PAD_W=pads[1],
        POOL_PAD_H=pool_pads[0],
        POOL_PAD_W=pool_pads[1],
        PAIRS=bool(tiles.wide) and w_in % 2 == 0,
        TILE_P=tiles.tile_p,
        TILE_Q=tiles.tile_q,
        BLOCK_M=rows,
        POOL_M=stem_pool_kernel.pool_m(tiles.tile_p, tiles.tile_q),
        BLOCK_K=stem_pool_kernel.block_k(s, pads[1], c),
        num_warps=tiles.warps,
        num_stages=tiles.stages,
    )
    return y8


@stem_pool.register_kernel("cpu")  # type: ignore[untyped-decorator]
def stem_pool_reference(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: torch.Tensor,
    pads: list[int],
    pool_pads: list[int],
    out8_scale: float,
    config: list[int],
) -> torch.Tensor:
    """What the kernel computes: the fp16 products summed in fp32, the bias added and rounded to
    fp16 once, relu, the max pool (padding -inf, as ONNX's; the kernel's 0 never wins after the
    relu), e4m3."""
    del config
    y = F.conv2d(
        onnx_padded(x.float(), pads),
        w.float().permute(0, 3, 1, 2),
        stride=stem_pool_kernel.STRIDE.value,
    )
    y = torch.relu((y + bias.view(1, -1, 1, 1)).half().float())
    y = pool_reference(
        y, stem_pool_kernel.POOL.value, stem_pool_kernel.POOL_STRIDE.value, pool_pads
    )
    y8, _, _ = _stem_output(x, w, pads, pool_pads)
    y8.copy_(quantize(y, out8_scale))
    return y8
