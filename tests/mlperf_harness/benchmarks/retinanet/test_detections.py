"""RetinaNet's anchors and postprocessing against the reference's rules, computed independently."""

from __future__ import annotations

import numpy as np

from mlperf_harness.benchmarks.retinanet.anchors import (
    anchors_per_level,
    base_anchors,
    decode,
    encode,
    grid_sizes,
    level_anchors,
)
from mlperf_harness.benchmarks.retinanet.detections import (
    DETECTION_BYTES,
    Postprocessor,
    batched_nms,
)


def test_pyramid_and_anchor_counts_at_800() -> None:
    assert grid_sizes(800) == (100, 50, 25, 13, 7)
    assert sum(anchors_per_level(800)) == 120087
    anchors = level_anchors(800)
    # torchvision's integer strides: 800 // 13 = 61 and 800 // 7 = 114 on P6 and P7
    assert anchors[3][9, 0] - anchors[3][0, 0] == 61
    assert anchors[4][9, 0] - anchors[4][0, 0] == 114
    # ratio 0.5 (h/w), size 32: w = 32 / sqrt(0.5) = 45.25, h = 22.6: rounded half-widths 23, 11
    assert base_anchors((32, 40, 50))[0].tolist() == [-23.0, -11.0, 23.0, 11.0]


def test_decode_inverts_encode() -> None:
    rng = np.random.default_rng(0)
    anchors = level_anchors(800)[1][:50]
    boxes = anchors + rng.normal(0, 4, anchors.shape).astype(np.float32)
    np.testing.assert_allclose(decode(encode(boxes, anchors), anchors), boxes, atol=1e-3)


def test_nms_is_per_class_and_best_first() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10], [50, 50, 60, 60]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.95], np.float32)
    labels = np.array([0, 0, 1, 0])
    assert batched_nms(boxes, scores, labels, 0.5).tolist() == [3, 0, 2]


def test_one_confident_anchor_gives_one_normalised_row() -> None:
    post = Postprocessor(800)
    classes = 3
    head = np.full((post.anchor_count, 4 + classes), -10.0, np.float32)
    head[:, :4] = 0
    anchor = 4 * 9 + 4  # P3, position (0, 4), the square anchor of size 40
    head[anchor, 4 + 2] = 3.0  # class 2, score sigmoid(3) = 0.953
    detections = post.detect(head)
    assert detections.labels.tolist() == [2]
    rows = post.rows(detections, 17)
    x1, y1, x2, y2 = np.clip(level_anchors(800)[0][anchor], 0, 800)
    expected = [17, y1 / 800, x1 / 800, y2 / 800, x2 / 800, 1 / (1 + np.exp(-3.0)), 2]
    np.testing.assert_allclose(rows[0], expected, rtol=1e-6)
    packed, sizes = post.batch_rows(np.stack([head, np.full_like(head, -10.0)]), [17, 18])
    assert sizes.tolist() == [DETECTION_BYTES, 0]
    assert packed.shape == (2, DETECTION_BYTES)


def test_top_k_per_level_and_the_cap() -> None:
    post = Postprocessor(800)
    rng = np.random.default_rng(1)
    head = np.full((post.anchor_count, 5), -10.0, np.float32)
    head[:, :4] = 0
    # 2,000 well separated candidates on P3 only (every 9th anchor: one shape, distinct positions)
    chosen = np.arange(0, 90000, 45)[:2000]
    head[chosen, 4] = rng.uniform(0, 4, len(chosen)).astype(np.float32)
    detections = post.detect(head)
    assert len(detections) == 300  # at most 300 after NMS, from at most 1,000 of the level
    assert np.all(np.diff(detections.scores) <= 0)
