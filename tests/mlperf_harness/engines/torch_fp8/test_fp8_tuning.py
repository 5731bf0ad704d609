"""The FP8 engine's tiling record and which tilings each layer tries (engines/torch_fp8/ops.py,
tuning.py). Skipped where torch or triton is not installed (CI); the kernel itself is checked against
its CPU reference in both epilogue forms on a GPU host (device_check kernels)."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest
from fp8_graphs import bottleneck_graph

from mlperf_harness.engines.torch_fp8 import plan

# Collected and skipped (not a module skipped whole, which pytest reports as exit code 5) where
# torch or triton is missing.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None,
    reason="torch and triton are not installed (CPU build)",
)


def test_a_tiling_round_trips_through_its_list_prefetch_included() -> None:
    from mlperf_harness.engines.torch_fp8.ops import KernelConfig

    for config in (KernelConfig(128, 64, 64, 4, 4), KernelConfig(64, 128, 64, 4, 2, prefetch=1)):
        assert KernelConfig.from_list(config.as_list()) == config
    assert KernelConfig.from_list([128, 128, 64, 8, 3, 8]).prefetch == 0  # a list from before


def test_prefetching_tilings_are_tried_beside_the_plain_ones_on_residual_layers_only() -> None:
    from mlperf_harness.engines.torch_fp8 import tuning

    model = bottleneck_graph()
    amax = {name: 2.0 + i for i, name in enumerate(plan.calibrated_tensors(model))}
    layers = {layer.name: layer for layer in plan.plan_fp8(model, amax).layers}
    # ResNet-50's stage-1 shapes (the test graph's layers have 32 channels, which no block fits).
    reduce = dataclasses.replace(
        layers["block1/conv1/out"], weights=np.zeros((64, 1, 1, 64), np.float32)
    )
    expand = dataclasses.replace(
        layers["block1/conv3/out"], weights=np.zeros((256, 1, 1, 64), np.float32)
    )
    assert expand.residual is not None and reduce.residual is None
    plain = tuning.candidates_for(reduce)
    assert plain == [config for config in tuning.CANDIDATES if config.fits(64)]
    assert not any(config.prefetch for config in plain)
    # The plain forms stay candidates beside the prefetching ones: a layer cannot get slower.
    assert tuning.candidates_for(expand) == [*plain, *tuning.PREFETCH_CANDIDATES]
    assert all(config.prefetch for config in tuning.PREFETCH_CANDIDATES)
    everything = (*tuning.CANDIDATES, *tuning.PREFETCH_CANDIDATES)
    assert len({tuning.label(config) for config in everything}) == len(everything)  # tuning.json
