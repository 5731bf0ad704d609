"""Two GPU postprocessing outputs compared (benchmarks/retinanet/detections_compare.py): equal bit
for bit, equal up to rounding (coordinates and scores a few ulps apart; an NMS pair at the IoU
threshold decided the other way, what it removed or left after it, the list's tail moved past the
300 cut), or different: a box moved by a pixel, a detection dropped, an image not settled. The
outputs here are built by the host's own greedy NMS (detections.batched_nms) on boxes made for each
case, so a borderline pair is one that the host itself decides either way."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.benchmarks.retinanet.detections import (
    DETECTIONS_PER_IMAGE,
    NMS_THRESHOLD,
    VALUES_PER_DETECTION,
    batched_nms,
)
from mlperf_harness.benchmarks.retinanet.detections_compare import (
    BORDERLINE,
    CASCADE,
    CUT,
    DIFFER,
    EQUAL,
    ROUNDING,
    TIE,
    UNEXPLAINED,
    candidate_rows,
    compare_detections,
)
from mlperf_harness.benchmarks.retinanet.engine_detections import (
    CONVERGED,
    COUNT,
    ROWS_PER_IMAGE,
)
from mlperf_harness.errors import HarnessError

SIZE = np.float32(800)
Boxes = npt.NDArray[np.float32]


def output(*images: tuple[Boxes, Boxes, npt.NDArray[np.int64]]) -> npt.NDArray[np.float32]:
    """An engine output [N, 301, 7] of each image's candidates (pixel boxes x1, y1, x2, y2, scores,
    labels) after the host's greedy NMS and the 300 cut, as the GPU lays it out."""
    out = np.zeros((len(images), ROWS_PER_IMAGE, VALUES_PER_DETECTION), np.float32)
    for image, (boxes, scores, labels) in enumerate(images):
        keep = batched_nms(boxes, scores, labels, NMS_THRESHOLD)[:DETECTIONS_PER_IMAGE]
        rows = out[image, 1 : 1 + len(keep)]
        rows[:, 1:5] = boxes[keep][:, [1, 0, 3, 2]] / SIZE
        rows[:, 5], rows[:, 6] = scores[keep], labels[keep]
        out[image, 0, COUNT], out[image, 0, CONVERGED] = len(keep), 1.0
    return out


def scattered(count: int, seed: int) -> tuple[Boxes, Boxes, npt.NDArray[np.int64]]:
    """`count` boxes that overlap nothing of their class (a grid, a class each), scores below 0.9."""
    rng = np.random.default_rng(seed)
    corner = np.stack(np.divmod(np.arange(count), 20), 1).astype(np.float32) * 38 + 20
    boxes = np.concatenate([corner, corner + 30], 1).astype(np.float32)
    scores = np.sort(rng.uniform(0.1, 0.9, count).astype(np.float32))[::-1].copy()
    return boxes, scores, rng.integers(0, 264, count).astype(np.int64)


def with_trio(height: float, extra: int) -> tuple[Boxes, Boxes, npt.NDArray[np.int64]]:
    """`extra` scattered boxes and, above them, a trio of class 300: s (100 x 100), d inside it of
    `height` (IoU with s height / 100: a pair at the threshold for 50), and boxes e that d
    overlaps by 0.8 and s by less than 0.5, which do not overlap each other above 0.5."""
    boxes, scores, labels = scattered(extra, 0)
    s = [0, 0, 100, 100]
    d = [0, 0, 100, height]
    es = [[0, 10, 80, 60], [20, 0, 100, 50]]  # IoU with d 0.55 and 0.8, with each other 0.43
    trio = np.asarray([s, d, *es], np.float32)
    return (
        np.concatenate([trio, boxes]),
        np.concatenate([np.asarray([0.99, 0.98, 0.97, 0.96], np.float32), scores]),
        np.concatenate([np.full(len(trio), 300), labels]),
    )


def test_one_output_against_itself_is_equal() -> None:
    out = output(scattered(40, 1), scattered(0, 2))
    result = compare_detections(out, out.copy())
    assert result.verdict == EQUAL
    assert result.detections == result.bit_equal == 40
    assert result.line() == "equal (40 detections, bit for bit)"


def test_ulps_apart_are_equal_up_to_rounding() -> None:
    first = output(scattered(60, 3))
    second = first.copy()
    rows = second[0, 1:61]
    rows[::3, 1:5] = np.nextafter(rows[::3, 1:5], np.float32(1))  # one ulp
    rows[::7, 2] += np.float32(6e-8)  # the most the CPU's compiled decoding moved
    rows[::5, 5] = np.nextafter(rows[::5, 5], np.float32(0))
    result = compare_detections(first, second)
    assert result.verdict == ROUNDING
    assert result.matched == 60 and not result.differences
    assert 0 < result.most_box_difference < 1e-7
    assert 0 < result.most_score_difference < 2e-7
    assert result.line().startswith("equal up to rounding (60 detections: ")


def test_a_moved_box_or_a_dropped_detection_differs() -> None:
    first = output(scattered(60, 4))
    moved = first.copy()
    moved[0, 10, 2] += np.float32(1) / SIZE  # one pixel
    result = compare_detections(first, moved)
    assert result.verdict == DIFFER
    assert [d.reason for d in result.differences] == [UNEXPLAINED, UNEXPLAINED]
    assert "first: image 0: the first's detection 9" in result.line()
    dropped = first.copy()
    dropped[0, 0, COUNT] = 59
    assert compare_detections(first, dropped).verdict == DIFFER


def test_a_pair_at_the_threshold_and_what_it_changed_are_rounding() -> None:
    # IoU(s, d) = 0.5 exactly: d is kept and removes both e; a hair taller, d is removed by s and
    # both e stay: the second has one detection more, which pushes the first's last past the cut.
    extra = DETECTIONS_PER_IMAGE - 1
    first = output(with_trio(50.0, extra))
    second = output(with_trio(50.0001, extra))
    assert first[0, 0, COUNT] == second[0, 0, COUNT] == DETECTIONS_PER_IMAGE
    result = compare_detections(first, second)
    assert result.verdict == ROUNDING, result.line()
    reasons = sorted((d.side, d.reason) for d in result.differences)
    assert reasons == [(0, BORDERLINE), (0, CUT), (1, CASCADE), (1, CASCADE)]
    borderline = next(d for d in result.differences if d.reason == BORDERLINE)
    assert borderline.iou == pytest.approx(0.5, abs=1e-5)
    # d 10 px shorter (IoU with s 0.4, far from the threshold): kept, it removes only the second
    # e. Against the second output that is a real difference, not rounding.
    shorter = output(with_trio(40.0, extra))
    result = compare_detections(shorter, second)
    assert result.verdict == DIFFER
    assert "label 300, score 0.98) only there: unexplained" in result.line()


def test_two_candidates_of_equal_score_kept_in_the_other_order_are_a_tie() -> None:
    # Two boxes of one class, equal scores, IoU 0.6: each way keeps the one it met first.
    extra_boxes, extra_scores, extra_labels = scattered(30, 7)
    pair = np.asarray([[100, 100, 200, 200], [100, 125, 200, 225]], np.float32)
    tied = np.asarray([0.95, 0.95], np.float32)

    def image(order: list[int]) -> tuple[Boxes, Boxes, npt.NDArray[np.int64]]:
        return (
            np.concatenate([pair[order], extra_boxes]),
            np.concatenate([tied, extra_scores]),
            np.concatenate([[5, 5], extra_labels]),
        )

    first, second = output(image([0, 1])), output(image([1, 0]))
    boxes, scores, labels = image([0, 1])
    candidates = candidate_rows(boxes[None], scores[None], labels[None], float(SIZE))
    result = compare_detections(first, second, candidates)
    assert result.verdict == ROUNDING, result.line()
    assert sorted(d.reason for d in result.differences) == [TIE, TIE]
    assert compare_detections(first, second).verdict == DIFFER  # without the candidates
    # One box moved 2 px instead: not a candidate, no tie.
    moved = boxes.copy()
    moved[1, 1] += 2
    moved_out = output((moved[[1, 0, *range(2, len(moved))]], scores, labels))
    assert compare_detections(first, moved_out, candidates).verdict == DIFFER


def test_a_cut_alone_is_not_rounding() -> None:
    full = output(scattered(DETECTIONS_PER_IMAGE + 5, 5))
    short = full.copy()
    short[0, DETECTIONS_PER_IMAGE] = short[0, DETECTIONS_PER_IMAGE - 1]  # last row changed
    short[0, DETECTIONS_PER_IMAGE, 2] += np.float32(0.1)
    result = compare_detections(full, short)
    assert result.verdict == DIFFER


def test_an_unsettled_image_and_a_wrong_shape() -> None:
    out = output(scattered(5, 6))
    unsettled = out.copy()
    unsettled[0, 0, CONVERGED] = 0.0
    assert compare_detections(unsettled, unsettled.copy()).verdict == DIFFER
    assert "NOT settled" in compare_detections(out, unsettled).line()
    with pytest.raises(HarnessError, match=r"\[N, 301, 7\], got \[1, 300, 7\]"):
        compare_detections(out[:, :300], out[:, :300])
