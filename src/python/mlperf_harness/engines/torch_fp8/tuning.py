"""Build-time choice of each FP8 convolution's tiling, timed on the GPU at the engine's batch size.

Every candidate that fits a layer (candidates_for: the pointer kernel's CANDIDATES, plus
PREFETCH_CANDIDATES for a layer with a residual; on a 1x1 layer of stride 1 also the TMA GEMM's
(reading e4m3, or fp16 quantized as it loads), one program a tile and persistent; on another layer of stride 1, or a strided 1x1 one,
reading e4m3 the TMA implicit GEMM's, likewise) is launched on that layer's real shapes and timed
with CUDA events; the fastest is compiled into the engine, so a layer changes kernel only where
that is faster. Layers of one shape share one timing. The stem (plan.Fp8StemLayer) likewise: the
fused kernel's tilings (STEM_CANDIDATES) against cuDNN's convolution then the max pool kernel
(ops.UNFUSED_STEM, the path before the fused kernel), so the stem too runs fused only where that
is faster. Each layer's convolution is also timed in fp16 by cuDNN, as an fp16 engine computes it
(cudnn_fp16_us): the record says where the FP8 kernels gain on fp16 and where they lose; it
chooses nothing.
The candidates are part of this module's source, so they are part of the engine's key; the choices
and every timing are written beside the engine (tuning.json) for inspection.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from mlperf_harness.engines.torch_fp8 import ops
from mlperf_harness.engines.torch_fp8.ops import KernelConfig, StemConfig
from mlperf_harness.engines.torch_fp8.plan import Fp8ConvLayer, Fp8StemLayer, tma_rows_aligned

# (block_m, block_n, block_k, warps, stages): the tilings that won on ResNet-50's layers in the
# H200 measurements of a draft kernel (DESIGN.md, "8-bit on Hopper"), their neighbours, and small
# tiles for the 64-channel expansions, whose one reduction step leaves only the epilogue's memory
# traffic to hide (more blocks in flight per SM).
CANDIDATES = tuple(
    KernelConfig(*values)
    for values in (
        (128, 64, 64, 4, 4),
        (128, 128, 64, 4, 4),
        (128, 128, 64, 8, 3),
        (256, 128, 64, 8, 3),
        (128, 256, 64, 8, 3),
        (128, 128, 128, 8, 3),
        (64, 128, 64, 4, 4),
        (128, 64, 128, 4, 3),
        (64, 64, 64, 4, 2),
        (64, 128, 64, 4, 2),
        (128, 64, 64, 8, 2),
        (64, 256, 64, 8, 2),
    )
)
# The epilogue's loads issued before the reduction loop (conv_kernel.py, PREFETCH), tried on the
# layers with a residual only: the expansions, bound by their epilogue's traffic, whose residual
# load came after their one or two reduction steps. A few tilings, the base ones of those layers'
# sizes, not every candidate twice: each costs a compile and a timing per layer shape at build. A
# layer keeps the plain form where that is faster, so it cannot get slower.
PREFETCH_CANDIDATES = tuple(
    KernelConfig(*values, prefetch=1)
    for values in (
        (128, 64, 64, 4, 4),
        (128, 128, 64, 8, 3),
        (64, 128, 64, 4, 2),
        (64, 256, 64, 8, 2),
        (128, 256, 64, 8, 3),
    )
)
# The 1x1 layers' GEMM through TMA (pointwise_kernel.py), tried beside the kernel above on the
# layers it runs (a 1x1 convolution of stride 1): tiles of the sizes that suit
# Hopper's 8-bit GEMMs (128-byte rows of K where the channels allow), and the prefetching form on
# layers with a residual.
TMA_CANDIDATES = tuple(
    KernelConfig(*values, tma=1)
    for values in (
        (128, 64, 64, 4, 4),
        (128, 128, 64, 4, 4),
        (128, 128, 64, 8, 4),
        (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
        (128, 64, 128, 4, 4),
        (128, 128, 128, 4, 3),
        (128, 128, 128, 8, 3),
        (128, 256, 128, 8, 3),
        (64, 128, 128, 4, 4),
    )
)
TMA_PREFETCH_CANDIDATES = tuple(
    KernelConfig(*values, prefetch=1, tma=1)
    for values in ((128, 64, 64, 4, 4), (128, 128, 64, 8, 4), (128, 128, 128, 8, 3))
)
# The persistent form (pointwise_kernel.py), tried on every layer the TMA GEMM runs: (block_m,
# block_n, block_k, warps, stages, programs per SM), small tiles with several programs an SM, large
# ones with one or two.
TMA_PERSISTENT_CANDIDATES = tuple(
    KernelConfig(bm, bn, bk, warps, stages, tma=1, persistent=programs)
    for bm, bn, bk, warps, stages, programs in (
        (128, 64, 64, 4, 4, 2),
        (128, 64, 64, 4, 3, 3),
        (128, 128, 64, 4, 4, 2),
        (128, 128, 128, 4, 3, 1),
        (128, 128, 128, 8, 3, 1),
        (128, 256, 64, 8, 3, 1),
    )
)
# The TMA implicit GEMM of spatial_kernel.py, tried beside the pointer kernel on the layers it runs
# (ops.runs_spatial, reading e4m3: ResNet-50's 3x3 layers but the first of stages 2-4, and the
# strided projections of stages 2-4): (block_m, block_n, block_k, warps, stages, tile_w), a block
# of block_m // tile_w x tile_w output pixels: 16 x 8 and 8 x 16 for the 56-wide images, 32 x 4
# for the 28-wide (which 4 divides), 8 x 8 for the 7-wide (a block of 16 x 8 would be half
# overhang there).
SPATIAL_CANDIDATES = tuple(
    KernelConfig(bm, bn, bk, warps, stages, tma=1, tile_w=tile_w)
    for bm, bn, bk, warps, stages, tile_w in (
        (128, 64, 64, 4, 4, 8),
        (128, 64, 64, 4, 4, 16),
        (128, 128, 64, 4, 4, 8),
        (128, 128, 64, 8, 3, 8),
        (128, 128, 64, 4, 4, 4),
        (128, 128, 128, 8, 3, 8),
        (128, 256, 64, 8, 3, 8),
        (64, 128, 64, 4, 4, 8),
    )
)
# The implicit GEMM's persistent form (spatial_kernel.py), tried beside those: (block_m, block_n,
# block_k, warps, stages, tile_w, programs per SM), the tilings that won its layers on H100s in
# one program a tile (stage 1: 16 x 8 pixels by 64 channels; stages 2-3: 128 channels, blocks of
# 128 or 32 x 4 pixels) with one to three programs an SM, and 8 x 8 pixels for the 7-wide layers
# of stage 4, where the pointer kernel won. On one H200 they took 7 of those 16 layers at batch 256
# (the FP8 convolutions 4,136 -> 4,079 us) and 12 at batches 1 and 8 (-8.7%, -7.7%).
SPATIAL_PERSISTENT_CANDIDATES = tuple(
    KernelConfig(bm, bn, bk, warps, stages, tma=1, persistent=programs, tile_w=tile_w)
    for bm, bn, bk, warps, stages, tile_w, programs in (
        (128, 64, 64, 4, 4, 8, 2),
        (128, 64, 64, 4, 3, 8, 3),
        (128, 128, 64, 4, 4, 8, 2),
        (128, 128, 64, 4, 4, 4, 2),
        (128, 128, 128, 8, 3, 8, 1),
        (64, 128, 128, 4, 3, 8, 2),
    )
)
# The stem's forms (ops.StemConfig): unfused, and the fused kernel's (tile_p, tile_q, warps,
# stages, programs per SM), its input in 16-byte copies at L2 (wide). A tile of 7 x 8 pooled pixels
# is 256 GEMM rows (255 convolution pixels for 56 pooled ones: 14% computed twice at the tiles'
# edges), one of 3 x 8 is 128 (119 for 24, 24%). Programs per SM as many as fit (ptxas for sm_90:
# 245 registers a thread with 4 warps on 256 rows, 169 with 8, 153 with 4 on 128 rows); shared
# memory holds `stages` blocks of 16 + 4 KB (7 x 8) or 8 + 4 KB (3 x 8) a program. On an H100 each
# won at some batch size (docs/performance.md: 7 x 8 w8 at 1, 3 x 8 at 8, 7 x 8 w4 s3 at 256). Not
# tried, each having lost on an H100 at batch 256: 4 stages; 8-byte copies through L1 (by 13-30%),
# the form the kernel takes only on an odd input width, where pairs of columns do not line up; and
# one stage, whose plain 16-byte loads L1 caches (a tile's whole input, 11 KB, fits there) but none
# ahead of the reduction (592 us against 581 for the same tiling in 3 stages, 664-740 for the others).
# Nor two filter rows a reduction step (4 steps of 64 instead of 7 of 32, the eighth row zeros):
# 731-898 us against 583-586 on an H100 at batch 256; more registers (255 with 4 warps on 256
# rows, spilling) for fewer steps.
STEM_CANDIDATES = (
    ops.UNFUSED_STEM,
    *(
        StemConfig(*values, wide=1)
        for values in (
            (7, 8, 4, 3, 2),
            (7, 8, 8, 3, 1),
            (3, 8, 4, 3, 3),
        )
    ),
)
# Reduction blocks of 32 channels, for layers reading fewer than 64 (no block above divides 32):
# none in ResNet-50 or the real RetinaNet, but the RetinaNet stand-in's first stage reads 32.
NARROW_CHANNELS = 64
NARROW_CANDIDATES = tuple(
    KernelConfig(*values) for values in ((128, 64, 32, 4, 4), (64, 64, 32, 4, 3))
)
WARMUP, TIMED = 3, 20
Config = TypeVar("Config", KernelConfig, StemConfig)


def candidates_for(
    layer: Fp8ConvLayer, base: Sequence[KernelConfig] = CANDIDATES
) -> list[KernelConfig]:
    """The tilings tried on `layer`: those of `base` that fit it, the prefetching ones that fit
    when it has a residual, NARROW_CANDIDATES when it reads fewer than NARROW_CHANNELS channels,
    and the TMA kernels' where one runs it (ops.tma_kernel: the 1x1 GEMM on a 1x1 layer of stride
    1, the implicit GEMM on another layer of stride 1 or a strided 1x1 one reading e4m3; rows of
    output channels TMA can address, plan.tma_rows_aligned), one program a tile and persistent."""
    residual = layer.residual is not None
    pool = [*base, *(PREFETCH_CANDIDATES if residual else ())]
    if layer.channels[0] < NARROW_CHANNELS:
        pool += NARROW_CANDIDATES
    tma = None
    if tma_rows_aligned(layer):
        tma = ops.tma_kernel(layer.kernel, layer.stride, layer.pads, layer.input_fp16)
    if tma == ops.POINTWISE:
        pool += [
            *TMA_CANDIDATES,
            *(TMA_PREFETCH_CANDIDATES if residual else ()),
            *TMA_PERSISTENT_CANDIDATES,
        ]
    elif tma == ops.SPATIAL:
        pool += [*SPATIAL_CANDIDATES, *SPATIAL_PERSISTENT_CANDIDATES]
    return [config for config in pool if config.fits(layer.channels[0])]


@dataclass(frozen=True)
class LayerShape:
    batch: int
    height: int
    width: int
    layer: Fp8ConvLayer

    @property
    def key(self) -> tuple[Any, ...]:
        layer = self.layer
        return (
            self.batch,
            self.height,
            self.width,
            layer.channels,
            layer.kernel,
            layer.stride,
            layer.pads,
            layer.residual is not None,
            bool(layer.residual_scale),
            layer.input_fp16,
            layer.relu,
            layer.store16,
            layer.store8,
        )

    def output_shape(self) -> tuple[int, int, int, int]:
        layer = self.layer
        c, k = layer.channels
        r, s = layer.kernel
        return ops.output_shape(
            (self.batch, c, self.height, self.width), (k, r, s, c), layer.stride, layer.pads
        )

    def macs(self) -> int:
        n, k, p, q = self.output_shape()
        r, s = self.layer.kernel
        return n * p * q * k * r * s * self.layer.channels[0]


@dataclass(frozen=True)
class StemShape:
    batch: int
    height: int
    width: int
    layer: Fp8StemLayer


@dataclass(frozen=True)
class LayerChoice:
    name: str
    config: KernelConfig | StemConfig
    microseconds: float
    tried: dict[str, float]  # "128x64x64 w4 s4" -> microseconds (inf: failed to compile or run)
    # The same convolution in fp16 by cuDNN (cudnn_fp16_us), where it was timed: what the layer's
    # FP8 kernel has to beat for the engine to gain on an fp16 one.
    cudnn_fp16_us: float | None = None

    def to_json(self) -> dict[str, Any]:
        record = {
            "layer": self.name,
            "config": self.config.as_list(),
            "us": round(self.microseconds, 2),
            "tried_us": {
                k: (round(v, 2) if v != float("inf") else None) for k, v in self.tried.items()
            },
        }
        if self.cudnn_fp16_us is not None:
            record["cudnn_fp16_us"] = round(self.cudnn_fp16_us, 2)
        return record


def label(config: KernelConfig) -> str:
    prefetch = " prefetch" if config.prefetch else ""
    tma = " tma" if config.tma else ""
    persistent = f" persistent{config.persistent}" if config.persistent else ""
    pixels = f" pixels{config.block_m // config.tile_w}x{config.tile_w}" if config.tile_w else ""
    return (
        f"{config.block_m}x{config.block_n}x{config.block_k} w{config.warps} s{config.stages}"
        f"{prefetch}{tma}{persistent}{pixels}"
    )


def stem_label(config: StemConfig) -> str:
    if not config.fused:
        return "unfused: cuDNN + max pool"
    return (
        f"pool {config.tile_p}x{config.tile_q} w{config.warps} s{config.stages} "
        f"persistent{config.persistent}{' wide' if config.wide else ''}"
    )


def _time_launches(torch: Any, launch: Callable[[], None]) -> float:
    """Microseconds per call of `launch`, after warm-up calls (which compile its kernels)."""
    for _ in range(WARMUP):
        launch()
    torch.cuda.synchronize()
    # Timed as a CUDA graph of TIMED launches, as the engine runs: the op's Python dispatch and
    # Triton's launcher (tens of microseconds a call) would otherwise be most of a small layer's time.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(TIMED):
            launch()
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) * 1000.0 / TIMED


def _time_config(torch: Any, shape: LayerShape, config: KernelConfig) -> float:
    """Microseconds per launch of one tiling on random e4m3 data of the layer's shape."""
    layer = shape.layer
    c, k = layer.channels
    r, s = layer.kernel
    x = torch.randn(shape.batch, c, shape.height, shape.width, device="cuda")
    x = x.contiguous(memory_format=torch.channels_last)
    x8 = x.half() if layer.input_fp16 else ops.as_bits(x)
    w8 = ops.as_bits(torch.randn(k, r, s, c, device="cuda"))
    alpha = torch.full((k,), 1e-2, device="cuda")
    bias = torch.zeros(k, device="cuda")
    residual = None
    if layer.residual is not None:
        residual = torch.randn(shape.output_shape(), device="cuda", dtype=torch.float16)
        residual = residual.contiguous(memory_format=torch.channels_last)
        if layer.residual_scale:
            residual = ops.as_bits(residual)

    def launch() -> None:
        ops.conv(
            x8,
            w8,
            alpha,
            bias,
            residual,
            layer.stride,
            list(layer.pads),
            layer.relu,
            1.0,
            layer.residual_scale,
            layer.out8_scale or 1.0,
            layer.store16,
            layer.store8,
            config.as_list(),
        )

    return _time_launches(torch, launch)


def cudnn_fp16_us(torch: Any, shape: LayerShape) -> float:
    """Microseconds per launch of the layer's convolution in fp16 by cuDNN under its heuristics
    (torch's conv2d, channels-last), on random data of the layer's shape: the convolution alone,
    as an fp16 engine calls cuDNN. That engine then adds the bias, ReLU and residual in a pass of
    Inductor's own, which the FP8 kernel's epilogue does: the comparison favours fp16."""
    layer = shape.layer
    c, k = layer.channels
    r, s = layer.kernel
    top, left, bottom, right = layer.pads
    x = torch.randn(shape.batch, c, shape.height, shape.width, device="cuda").half()
    padding = (top, left)
    if (top, left) != (bottom, right):  # conv2d pads both sides alike: pad the input once here
        x, padding = torch.nn.functional.pad(x, (left, right, top, bottom)), (0, 0)
    x = x.contiguous(memory_format=torch.channels_last)
    w = (torch.randn(k, c, r, s, device="cuda") * 0.1).half()
    w = w.contiguous(memory_format=torch.channels_last)

    def launch() -> None:
        torch.nn.functional.conv2d(x, w, None, layer.stride, padding)

    return _time_launches(torch, launch)


def choose_configs(
    torch: Any, shapes: Sequence[LayerShape], candidates: Sequence[KernelConfig] = CANDIDATES
) -> list[LayerChoice]:
    """The fastest fitting candidate (candidates_for) for each layer, with the same convolution's
    time in cuDNN fp16 beside it (both timed once per distinct shape)."""
    timed: dict[tuple[Any, ...], LayerChoice] = {}
    choices = []
    for shape in shapes:
        known = timed.get(shape.key)
        if known is None:
            fastest = _fastest(
                shape.layer.name,
                candidates_for(shape.layer, candidates),
                label,
                functools.partial(_time_config, torch, shape),
            )
            known = replace(fastest, cudnn_fp16_us=cudnn_fp16_us(torch, shape))
            timed[shape.key] = known
        choices.append(replace(known, name=shape.layer.name))
    return choices


def totals_us(choices: Sequence[LayerChoice]) -> tuple[float, float]:
    """Microseconds a batch over the layers: (in the chosen FP8 kernels, in cuDNN fp16 where timed)."""
    fp8 = sum(choice.microseconds for choice in choices)
    return fp8, sum(choice.cudnn_fp16_us or 0.0 for choice in choices)


def against_fp16(choices: Sequence[LayerChoice], batch: int) -> str:
    """One line: the FP8 kernels' total a batch against the same convolutions in cuDNN fp16, and
    how many layers are slower in FP8 (tuning.json has each)."""
    fp8, fp16 = totals_us(choices)
    slower = sum(
        1
        for choice in choices
        if choice.cudnn_fp16_us is not None and choice.microseconds > choice.cudnn_fp16_us
    )
    return (
        f"{fp8 / 1000:.3f} ms per batch of {batch} in the FP8 kernels, the same convolutions "
        f"{fp16 / 1000:.3f} ms in cuDNN fp16; {slower} of {len(choices)} layers slower in FP8"
    )


def _time_stem(torch: Any, shape: StemShape, config: StemConfig) -> float:
    """Microseconds per run of the stem in one form on random fp16 data of its shape."""
    layer = shape.layer
    c, k = layer.channels
    r, s = layer.kernel
    x = torch.randn(shape.batch, c, shape.height, shape.width, device="cuda").half()
    x = x.contiguous(memory_format=torch.channels_last)
    w = (torch.randn(k, r, s, c, device="cuda") * 0.1).half()
    bias = torch.zeros(k, device="cuda")

    def launch() -> None:
        ops.run_stem(x, w, bias, list(layer.pads), list(layer.pool_pads), layer.out8_scale, config)

    return _time_launches(torch, launch)


def choose_stem(
    torch: Any, shape: StemShape, candidates: Sequence[StemConfig] = STEM_CANDIDATES
) -> LayerChoice:
    """The stem's fastest form: unfused or a tiling of the fused kernel."""
    return _fastest(
        shape.layer.name,
        candidates,
        stem_label,
        functools.partial(_time_stem, torch, shape),
    )


def _fastest(
    name: str,
    candidates: Sequence[Config],
    label_of: Callable[[Config], str],
    time_of: Callable[[Config], float],
) -> LayerChoice:
    """The candidate `time_of` finds fastest for the layer `name`, with every candidate's time
    (inf: it did not compile, fit shared memory or run here)."""
    tried: dict[str, float] = {}
    for config in candidates:
        try:
            tried[label_of(config)] = time_of(config)
        except Exception:  # a tiling that does not compile or fit shared memory here
            tried[label_of(config)] = float("inf")
    best = min(candidates, key=lambda c: tried[label_of(c)])
    if tried[label_of(best)] == float("inf"):
        raise RuntimeError(f"no candidate tiling runs layer {name}")
    return LayerChoice(name, best, tried[label_of(best)], tried)
