"""The FP8 engine's tiling record and which tilings each layer tries (engines/torch_fp8/ops.py,
tuning.py). Skipped where torch or triton is not installed (CI); the kernel itself is checked against
its CPU reference in both epilogue forms on a GPU host (device_check kernels)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fp8_graphs import bottleneck_graph
from torch_needed import needs_torch_and_triton

from mlperf_harness.engines.torch_fp8 import plan

# Collected and skipped (not a module skipped whole, which pytest reports as exit code 5) where
# torch or triton is missing.
pytestmark = needs_torch_and_triton


def test_a_tiling_round_trips_through_its_list_prefetch_and_tma_included() -> None:
    from mlperf_harness.engines.torch_fp8.ops import KernelConfig

    for config in (
        KernelConfig(128, 64, 64, 4, 4),
        KernelConfig(64, 128, 64, 4, 2, prefetch=1),
        KernelConfig(128, 128, 128, 8, 3, prefetch=1, tma=1),
        KernelConfig(128, 64, 64, 4, 4, tma=1, persistent=2),
        KernelConfig(128, 128, 64, 4, 4, tma=1, tile_w=8),
    ):
        assert KernelConfig.from_list(config.as_list()) == config
    before = KernelConfig.from_list([128, 128, 64, 8, 3, 8])  # a list from before any of them
    assert before.prefetch == before.tma == before.persistent == before.tile_w == 0
    # A block of pixels must be whole rows of tile_w.
    assert KernelConfig(128, 64, 64, 4, 4, tma=1, tile_w=8).fits(64)
    assert not KernelConfig(128, 64, 64, 4, 4, tma=1, tile_w=3).fits(64)


def test_each_layer_tries_the_tilings_of_every_kernel_that_can_run_it() -> None:
    from mlperf_harness.engines.torch_fp8 import tuning

    model = bottleneck_graph()
    amax = {name: 2.0 + i for i, name in enumerate(plan.calibrated_tensors(model))}
    layers = {layer.name: layer for layer in plan.plan_fp8(model, amax).layers}
    # ResNet-50's stage-1 shapes (the test graph's layers have 32 channels, which no block fits).
    reduce = dataclasses.replace(
        layers["block1/conv1/out"], weights=np.zeros((64, 1, 1, 64), np.float32)
    )
    three = dataclasses.replace(
        layers["block1/conv2/out"], weights=np.zeros((64, 3, 3, 64), np.float32)
    )
    expand = dataclasses.replace(
        layers["block1/conv3/out"], weights=np.zeros((256, 1, 1, 64), np.float32)
    )
    assert expand.residual is not None and reduce.residual is None and three.kernel == (3, 3)

    def fitting(configs: tuple[object, ...]) -> list[object]:
        return [config for config in configs if config.fits(64)]  # type: ignore[attr-defined]

    conv = fitting(tuning.CANDIDATES)
    tma = fitting(tuning.TMA_CANDIDATES)
    persistent = fitting(tuning.TMA_PERSISTENT_CANDIDATES)
    spatial = fitting(tuning.SPATIAL_CANDIDATES) + fitting(tuning.SPATIAL_PERSISTENT_CANDIDATES)
    assert conv and tma and len(tma) < len(tuning.TMA_CANDIDATES)  # 128-channel blocks left out
    # The TMA GEMM runs 1x1 layers of stride 1 (reading e4m3, or fp16 quantized as it loads), the
    # TMA implicit GEMM other layers of stride 1 and strided 1x1 ones reading e4m3; the pointer
    # kernel runs all, so it stays a candidate everywhere and no layer can get slower.
    assert tuning.candidates_for(three) == [*conv, *spatial]
    assert tuning.candidates_for(dataclasses.replace(three, stride=2)) == conv
    # A strided 1x1 layer (a projection) is the implicit GEMM's on a strided view of its input.
    assert tuning.candidates_for(dataclasses.replace(reduce, stride=2)) == [*conv, *spatial]
    assert tuning.candidates_for(reduce) == [*conv, *tma, *persistent]
    assert tuning.candidates_for(dataclasses.replace(reduce, input_fp16=True)) == [
        *conv,
        *tma,
        *persistent,
    ]
    assert tuning.candidates_for(dataclasses.replace(three, input_fp16=True)) == conv
    # Output channels no multiple of a tile take the TMA kernels where TMA can address their rows
    # (plan.tma_rows_aligned): RetinaNet's class logits (2,376 channels stored in fp16) do, its box
    # regression (36) does not, nor 2,376 channels stored in e4m3 (rows of 2,376 bytes).
    logits = dataclasses.replace(three, weights=np.zeros((2376, 3, 3, 64), np.float32))
    logits = dataclasses.replace(logits, store16=True, store8=False, residual=None)
    assert tuning.candidates_for(logits) == [*conv, *spatial]
    assert tuning.candidates_for(dataclasses.replace(logits, store8=True)) == conv
    box = dataclasses.replace(logits, weights=np.zeros((36, 3, 3, 64), np.float32))
    assert tuning.candidates_for(box) == conv
    # Prefetching forms only where there is a residual to prefetch.
    assert tuning.candidates_for(expand) == [
        *conv,
        *fitting(tuning.PREFETCH_CANDIDATES),
        *tma,
        *fitting(tuning.TMA_PREFETCH_CANDIDATES),
        *persistent,
    ]
    assert all(c.prefetch and not c.tma for c in tuning.PREFETCH_CANDIDATES)
    assert all(c.tma and not c.prefetch for c in tuning.TMA_CANDIDATES)
    assert all(c.tma and c.prefetch for c in tuning.TMA_PREFETCH_CANDIDATES)
    assert all(c.tma and c.persistent for c in tuning.TMA_PERSISTENT_CANDIDATES)
    assert not any(c.persistent for c in (*tuning.TMA_CANDIDATES, *tuning.CANDIDATES))
    assert all(c.tma and c.tile_w and not c.persistent for c in tuning.SPATIAL_CANDIDATES)
    assert all(c.tma and c.tile_w and c.persistent for c in tuning.SPATIAL_PERSISTENT_CANDIDATES)
    everything = (
        *tuning.CANDIDATES,
        *tuning.PREFETCH_CANDIDATES,
        *tuning.TMA_CANDIDATES,
        *tuning.TMA_PREFETCH_CANDIDATES,
        *tuning.TMA_PERSISTENT_CANDIDATES,
        *tuning.SPATIAL_CANDIDATES,
        *tuning.SPATIAL_PERSISTENT_CANDIDATES,
    )
    assert len({tuning.label(config) for config in everything}) == len(everything)  # tuning.json


def test_the_stem_tries_the_unfused_path_and_each_fused_tiling() -> None:
    from mlperf_harness.engines.torch_fp8 import ops, stem_pool_kernel, tuning
    from mlperf_harness.engines.torch_fp8.ops import StemConfig

    # The unfused path (cuDNN, then the max pool kernel) is always a candidate: the stem cannot
    # get slower than it was.
    assert tuning.STEM_CANDIDATES[0] == ops.UNFUSED_STEM and not ops.UNFUSED_STEM.fused
    fused = tuning.STEM_CANDIDATES[1:]
    assert fused and all(config.fused for config in fused)
    assert all(config.wide for config in fused)  # 8-byte copies lost at every batch size
    for config in tuning.STEM_CANDIDATES:
        assert StemConfig.from_list(config.as_list()) == config
    # A tile's windows fit its GEMM rows: 7 x 8 pooled pixels are 255 convolution pixels of 256.
    for config in fused:
        rows = (2 * config.tile_p + 1) * (2 * config.tile_q + 1)
        assert rows <= stem_pool_kernel.block_m(config.tile_p, config.tile_q) < 2 * rows
    labels = {tuning.stem_label(config) for config in tuning.STEM_CANDIDATES}
    assert len(labels) == len(tuning.STEM_CANDIDATES)  # tuning.json's keys


def test_the_fastest_candidate_wins_and_one_that_fails_counts_as_never() -> None:
    from mlperf_harness.engines.torch_fp8 import ops, tuning

    times = {"unfused": 13.2, "fused": 7.1}

    def time_of(config: ops.StemConfig) -> float:
        if config.tile_p == 3:
            raise RuntimeError("out of shared memory")  # as a tiling too big for the GPU
        return times["fused" if config.fused else "unfused"]

    candidates = [ops.UNFUSED_STEM, ops.StemConfig(7, 8, 8, 3, 1, wide=1)]
    candidates.append(ops.StemConfig(3, 8, 4, 3, 3, wide=1))
    choice = tuning._fastest("stem", candidates, tuning.stem_label, time_of)
    assert (choice.config, choice.microseconds) == (candidates[1], 7.1)
    assert choice.tried[tuning.stem_label(candidates[2])] == float("inf")
    assert len(choice.tried) == 3
    with pytest.raises(RuntimeError, match="no candidate tiling runs layer stem"):
        tuning._fastest("stem", candidates[2:], tuning.stem_label, time_of)


def test_the_record_sets_each_layer_beside_cudnn_fp16() -> None:
    from mlperf_harness.engines.torch_fp8 import tuning
    from mlperf_harness.engines.torch_fp8.ops import KernelConfig

    config = KernelConfig(128, 64, 64, 4, 4)
    faster = tuning.LayerChoice("a", config, 100.0, {"x": 100.0}, cudnn_fp16_us=150.0)
    slower = tuning.LayerChoice("b", config, 300.0, {"x": 300.0}, cudnn_fp16_us=250.0)
    untimed = tuning.LayerChoice("stem", config, 50.0, {"x": 50.0})
    assert faster.to_json()["cudnn_fp16_us"] == 150.0
    assert "cudnn_fp16_us" not in untimed.to_json()
    assert tuning.totals_us([faster, slower, untimed]) == (450.0, 400.0)
    assert tuning.against_fp16([faster, slower], 8) == (
        "0.400 ms per batch of 8 in the FP8 kernels, the same convolutions 0.400 ms in cuDNN "
        "fp16; 1 of 2 layers slower in FP8"
    )
