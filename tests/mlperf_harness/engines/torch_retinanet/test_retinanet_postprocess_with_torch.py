"""RetinaNet's GPU postprocessing (engines/torch_retinanet/postprocess.py) on the CPU where torch is
installed: on head outputs of a small image size, its detections equal the host's
(benchmarks/retinanet/detections.py) row for row, and its NMS reports itself settled: in each NMS
way (the scan's operator runs its CPU reference here; its kernels are checked under Triton's
interpreter, test_nms_kernel_interpreted.py).

torch is no dependency of the CPU build, so in CI these tests are skipped; GPU hosts and any
environment with torch run them (benchmarks/retinanet/device/gpu_scenarios.sh's accuracy phase
checks the whole engine's mAP on a GPU).
"""

from __future__ import annotations

import numpy as np
import pytest
from torch_needed import needs_torch

from mlperf_harness.benchmarks.retinanet.anchors import anchors_per_level
from mlperf_harness.benchmarks.retinanet.detections import Postprocessor
from mlperf_harness.benchmarks.retinanet.engine_detections import engine_rows
from mlperf_harness.engines.torch_retinanet.nms_ways import NMS_WAYS

pytestmark = needs_torch
IMAGE_SIZE = 160  # grids 20, 10, 5, 3, 2: every level's top-k path, few enough pairs for a CPU
CLASSES = 3


@pytest.mark.parametrize("nms", NMS_WAYS)
@pytest.mark.parametrize("seed", range(3))
def test_gpu_postprocess_equals_the_host(seed: int, nms: str) -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess

    anchors = sum(anchors_per_level(IMAGE_SIZE))
    rng = np.random.default_rng(seed)
    heads = np.concatenate(
        [
            rng.normal(0, 0.2, (2, anchors, 4)),  # box deltas
            rng.normal(-2.5, 1.5, (2, anchors, CLASSES)),  # logits: some above 0.05, some not
        ],
        axis=2,
    ).astype(np.float32)
    module = GpuPostprocess(CLASSES, image_size=IMAGE_SIZE, nms=nms)
    with torch.no_grad():
        out = module(torch.from_numpy(heads)).numpy()
    assert out[:, 0, 1].tolist() == [1.0, 1.0]  # settled
    packed, sizes = engine_rows(out, [5, 6])
    want_packed, want_sizes = Postprocessor(IMAGE_SIZE).batch_rows(heads, [5, 6])
    np.testing.assert_array_equal(sizes, want_sizes)
    assert sizes.min() > 0
    got = packed.view(np.float32)
    want = want_packed.view(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_levels_best_pairs_are_one_top_k_over_every_pair() -> None:
    """level_top's two steps (the anchors of highest maximum, then the best pairs in their rows)
    give the values of one top-k over every (anchor, class) pair, each named by a pair that holds
    it: on fp16 logits, where many are equal, and on a level where a few anchors hold every best
    pair."""
    import torch  # pants: no-infer-dep

    from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess

    module = GpuPostprocess(CLASSES, image_size=IMAGE_SIZE)
    generator = torch.Generator().manual_seed(0)
    ties = torch.randn((2, 3000, 40), generator=generator).half().float()
    crowded = torch.full((2, 3000, 40), -5.0)
    crowded[:, 7, :] = torch.arange(40.0)  # one anchor holds the 40 best
    crowded[:, 11, :25] = torch.arange(25.0) + 0.5
    for logits in (ties, crowded):
        top, anchor, label = module.level_top(logits, 50)
        want = torch.topk(logits.reshape(2, -1), 50, dim=1).values
        assert torch.equal(top, want)
        assert torch.equal(logits[torch.arange(2)[:, None], anchor, label], top)


@pytest.mark.slow
def test_compiled_postprocess_equals_eager_up_to_rounding() -> None:
    """torch.compile (Inductor's C++ on the CPU) rounds the decoding and the sigmoid otherwise than
    eager: the A/B's tolerance (detections_compare.py) holds, and calls the result equal up to
    rounding, not different. The rounds way only: the scan way's Triton kernels compile for GPUs
    alone (test_nms_kernel_compiles_for_hopper.py)."""
    import torch  # pants: no-infer-dep

    from mlperf_harness.benchmarks.retinanet.detections_compare import (
        EQUAL,
        ROUNDING,
        compare_detections,
    )
    from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess

    classes = 24
    anchors = sum(anchors_per_level(IMAGE_SIZE))
    generator = torch.Generator().manual_seed(0)
    head = torch.randn((2, anchors, 4 + classes), generator=generator)
    head[..., :4] *= 0.2
    head = head.half()  # as the engine's network hands it over
    module = GpuPostprocess(classes, image_size=IMAGE_SIZE, nms="rounds").eval()
    with torch.no_grad():
        eager = module(head).numpy()
        compiled = torch.compile(module, fullgraph=True)(head).numpy()
    result = compare_detections(eager, compiled)
    assert result.verdict in (EQUAL, ROUNDING), result.line()
    assert result.matched == result.detections > 0
    assert result.most_box_difference < 1e-6


def test_each_levels_outputs_as_they_lie_give_the_concatenated_heads_detections() -> None:
    """`detections` on each level's (box deltas, class logits), separate tensors as the engine's
    network gives them, equals the module on the levels concatenated, bit for bit."""
    import torch  # pants: no-infer-dep

    from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess

    anchors = sum(anchors_per_level(IMAGE_SIZE))
    rng = np.random.default_rng(5)
    heads = torch.from_numpy(
        np.concatenate(
            [rng.normal(0, 0.2, (2, anchors, 4)), rng.normal(-2.5, 1.5, (2, anchors, CLASSES))],
            axis=2,
        ).astype(np.float32)
    )
    module = GpuPostprocess(CLASSES, image_size=IMAGE_SIZE)
    levels = [(d.contiguous(), c.contiguous()) for d, c in module.split(heads)]
    assert tuple(d.shape[1] for d, _ in levels) == anchors_per_level(IMAGE_SIZE)
    with torch.no_grad():
        assert torch.equal(module.detections(levels), module(heads))
    with pytest.raises(ValueError, match="4 levels of head outputs, not 5"):
        module.detections(levels[:4])
