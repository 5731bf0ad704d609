"""The torch engine's detections output read on the host: each image's rows cut to its count with
its index set, the same bytes detections.py packs; a wrong shape and an unsettled NMS refused in
one line. And the fixed point the GPU's NMS computes (engines/torch_retinanet/postprocess.py),
written here in NumPy on clustered boxes: once settled it is the host's greedy per-class NMS."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.benchmarks.retinanet.anchors import box_iou
from mlperf_harness.benchmarks.retinanet.detections import (
    DETECTIONS_PER_IMAGE,
    NMS_THRESHOLD,
    VALUES_PER_DETECTION,
    batched_nms,
    pack_rows,
)
from mlperf_harness.benchmarks.retinanet.engine_detections import (
    CANDIDATES,
    CONVERGED,
    COUNT,
    ROWS_PER_IMAGE,
    engine_rows,
)
from mlperf_harness.errors import HarnessError


def _output(counts: list[int], converged: bool = True) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(0)
    out = np.zeros((len(counts), ROWS_PER_IMAGE, VALUES_PER_DETECTION), np.float32)
    for image, count in enumerate(counts):
        out[image, 0, COUNT], out[image, 0, CONVERGED] = count, float(converged)
        out[image, 0, CANDIDATES] = 1000
        out[image, 1 : 1 + count, 1:] = rng.random((count, VALUES_PER_DETECTION - 1))
    return out


def test_engine_rows_cut_each_image_to_its_count_with_its_index() -> None:
    out = _output([3, 0, DETECTIONS_PER_IMAGE])
    packed, sizes = engine_rows(out, [7, 8, 9])
    expected = []
    for image, (count, index) in enumerate(
        zip([3, 0, DETECTIONS_PER_IMAGE], [7, 8, 9], strict=True)
    ):
        rows = out[image, 1 : 1 + count].copy()
        rows[:, 0] = index
        expected.append(rows)
    want_packed, want_sizes = pack_rows(expected)
    assert sizes.tolist() == [3 * 28, 0, DETECTIONS_PER_IMAGE * 28]
    np.testing.assert_array_equal(sizes, want_sizes)
    np.testing.assert_array_equal(packed, want_packed)
    first = packed[0, : sizes[0]].view(np.float32).reshape(3, VALUES_PER_DETECTION)
    assert first[:, 0].tolist() == [7.0, 7.0, 7.0]


def test_engine_rows_of_images_without_detections_and_of_no_images() -> None:
    packed, sizes = engine_rows(_output([0, 0]), [3, 4])
    assert packed.shape == (2, 0) and sizes.tolist() == [0, 0]
    packed, sizes = engine_rows(_output([]), [])
    assert packed.shape == (0, 0) and sizes.tolist() == []


def test_engine_rows_refuse_a_wrong_shape_and_an_unsettled_nms() -> None:
    with pytest.raises(HarnessError, match="expected"):
        engine_rows(_output([1, 1]), [0])
    with pytest.raises(HarnessError, match="fixed point for sample 4"):
        engine_rows(_output([2], converged=False), [4])


def _cluster_nms(
    boxes: npt.NDArray[np.float32], labels: npt.NDArray[np.int64], rounds: int
) -> tuple[npt.NDArray[np.bool_], bool]:
    """The GPU's formulation (boxes sorted best first): keep = valid; keep_i = not any j < i
    (keep_j and S_ji), `rounds` times, then whether one more round changes anything."""
    iou = box_iou(boxes, boxes)  # [j, i]
    count = len(boxes)
    suppresses = (
        (iou > NMS_THRESHOLD)
        & (labels[:, None] == labels[None, :])
        & (np.arange(count)[:, None] < np.arange(count)[None, :])
    )
    keep = np.ones(count, dtype=bool)
    for _ in range(rounds):
        keep = ~(keep @ suppresses.astype(np.int64) > 0)
    settled = ~(keep @ suppresses.astype(np.int64) > 0)
    return settled, bool((settled == keep).all())


@pytest.mark.parametrize("seed", range(4))
def test_the_nms_fixed_point_is_greedy_nms(seed: int) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(50, 750, (20, 2))  # objects, each with a cloud of overlapping boxes
    which = rng.integers(0, len(centres), 1500)
    centre = centres[which] + rng.normal(0, 12, (1500, 2))
    size = rng.uniform(30, 90, (1500, 2))
    boxes = np.concatenate([centre - size / 2, centre + size / 2], axis=1).astype(np.float32)
    labels = (which % 3 + rng.integers(0, 2, 1500)).astype(np.int64)
    scores = np.sort(rng.random(1500).astype(np.float32))[::-1].copy()
    greedy = batched_nms(boxes, scores, labels, NMS_THRESHOLD)
    settled, converged = _cluster_nms(boxes, labels, rounds=64)
    assert converged
    assert np.flatnonzero(settled).tolist() == sorted(greedy.tolist())
    # Too few rounds: not settled, and said so (what the engine's header reports).
    _, early = _cluster_nms(boxes, labels, rounds=1)
    assert not early
