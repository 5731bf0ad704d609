"""RetinaNet's postprocessing on the host (NumPy), as MLCommons' reference does it, and the rows
LoadGen logs.

Per image and pyramid level: sigmoid of the class logits, candidates with a score above 0.05, the
1,000 best of them, each candidate's box decoded from its anchor and clipped to the image; then,
over all levels, non-maximum suppression per class at IoU 0.5 and the 300 best detections
(torchvision's RetinaNet.postprocess_detections with the MLPerf model's settings).

Each detection is logged as seven float32 values [image index, ymin, xmin, ymax, xmax, score,
label], the box divided by the input size (800): what MLCommons' `accuracy-openimages.py` reads
(it scales back by each original image's height and width). An image's response is its
detections' rows in score order, 28 bytes each, and empty when it has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.retinanet.anchors import IMAGE_SIZE, decode, level_anchors

Float32Array = npt.NDArray[np.float32]

SCORE_THRESHOLD = 0.05
TOPK_CANDIDATES = 1000  # per level, before NMS
NMS_THRESHOLD = 0.5
DETECTIONS_PER_IMAGE = 300
VALUES_PER_DETECTION = 7  # image index, ymin, xmin, ymax, xmax, score, label
DETECTION_BYTES = VALUES_PER_DETECTION * 4
BOX_VALUES = 4  # the engine's output: per anchor, 4 box deltas then the class logits


@dataclass(frozen=True)
class Detections:
    """One image's detections after NMS, best first: boxes x1, y1, x2, y2 in input pixels."""

    boxes: Float32Array
    scores: Float32Array
    labels: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.scores)


class Postprocessor:
    """Decodes head outputs [N, anchors, 4 + classes] into each image's logged rows."""

    def __init__(self, image_size: int = IMAGE_SIZE) -> None:
        self.image_size = image_size
        self.anchors = level_anchors(image_size)
        self.bounds = np.cumsum([0, *(len(level) for level in self.anchors)])

    @property
    def anchor_count(self) -> int:
        return int(self.bounds[-1])

    def detect(self, head: Float32Array) -> Detections:
        """One image's head outputs [anchors, 4 + classes] -> its detections."""
        if head.ndim != 2 or head.shape[0] != self.anchor_count or head.shape[1] <= BOX_VALUES:
            raise ValueError(
                f"head outputs {list(head.shape)}: expected [{self.anchor_count}, 4 + classes]"
            )
        classes = head.shape[1] - BOX_VALUES
        boxes, scores, labels = [], [], []
        for level, anchors in enumerate(self.anchors):
            rows = head[self.bounds[level] : self.bounds[level + 1]]
            logits = rows[:, BOX_VALUES:].reshape(-1)
            # sigmoid(x) > t  <=>  x > logit(t): the threshold on the logits spares computing
            # every sigmoid (the same candidates; their scores are computed below).
            candidates = np.flatnonzero(logits > np.float32(_LOGIT_THRESHOLD))
            level_scores = _sigmoid(logits[candidates])
            passing = level_scores > np.float32(SCORE_THRESHOLD)
            candidates, level_scores = candidates[passing], level_scores[passing]
            if len(candidates) > TOPK_CANDIDATES:
                best = np.argpartition(-level_scores, TOPK_CANDIDATES - 1)[:TOPK_CANDIDATES]
                candidates, level_scores = candidates[best], level_scores[best]
            order = np.argsort(-level_scores, kind="stable")
            candidates, level_scores = candidates[order], level_scores[order]
            anchor_index = candidates // classes
            decoded = decode(rows[anchor_index, :BOX_VALUES], anchors[anchor_index])
            boxes.append(np.clip(decoded, 0, np.float32(self.image_size)))
            scores.append(level_scores)
            labels.append(candidates % classes)
        all_boxes = np.concatenate(boxes)
        all_scores = np.concatenate(scores)
        all_labels = np.concatenate(labels).astype(np.int64)
        keep = batched_nms(all_boxes, all_scores, all_labels, NMS_THRESHOLD)
        keep = keep[:DETECTIONS_PER_IMAGE]
        return Detections(all_boxes[keep], all_scores[keep], all_labels[keep])

    def rows(self, detections: Detections, image_index: int) -> Float32Array:
        """The [count, 7] float32 rows LoadGen logs for one image."""
        size = np.float32(self.image_size)
        out = np.empty((len(detections), VALUES_PER_DETECTION), dtype=np.float32)
        out[:, 0] = np.float32(image_index)
        out[:, 1] = detections.boxes[:, 1] / size
        out[:, 2] = detections.boxes[:, 0] / size
        out[:, 3] = detections.boxes[:, 3] / size
        out[:, 4] = detections.boxes[:, 2] / size
        out[:, 5] = detections.scores
        out[:, 6] = detections.labels.astype(np.float32)
        return out

    def batch_rows(
        self, heads: Float32Array, sample_indices: Sequence[int]
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """A batch's head outputs -> rows of one width (the most detections in the batch) and each
        row's byte count: the sized responses LoadGen gets."""
        per_image = [
            self.rows(self.detect(head), index)
            for head, index in zip(heads, sample_indices, strict=True)
        ]
        return pack_rows(per_image)


def pack_rows(
    per_image: Sequence[Float32Array],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Each image's [count, 7] float32 rows as one uint8 array of the widest, plus byte counts."""
    sizes = np.array([rows.nbytes for rows in per_image], dtype=np.int64)
    width = int(sizes.max()) if len(sizes) else 0
    packed = np.zeros((len(per_image), width), dtype=np.uint8)
    for i, rows in enumerate(per_image):
        packed[i, : rows.nbytes] = np.ascontiguousarray(rows).view(np.uint8).reshape(-1)
    return packed, sizes


_LOGIT_THRESHOLD = float(np.log(SCORE_THRESHOLD / (1 - SCORE_THRESHOLD))) - 1e-4


def _sigmoid(x: Float32Array) -> Float32Array:
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def batched_nms(
    boxes: Float32Array, scores: Float32Array, labels: npt.NDArray[np.int64], threshold: float
) -> npt.NDArray[np.int64]:
    """Greedy NMS within each label (a box suppresses later boxes of its label whose IoU with it
    exceeds `threshold`); the kept indices, highest score first."""
    kept: list[npt.NDArray[np.int64]] = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        kept.append(members[_nms(boxes[members], scores[members], threshold)])
    if not kept:
        return np.zeros(0, dtype=np.int64)
    keep = np.concatenate(kept)
    return keep[np.argsort(-scores[keep], kind="stable")].astype(np.int64)


def _nms(boxes: Float32Array, scores: Float32Array, threshold: float) -> npt.NDArray[np.int64]:
    order = np.argsort(-scores, kind="stable")
    x1, y1, x2, y2 = (boxes[:, i] for i in range(4))
    areas = (x2 - x1) * (y2 - y1)
    keep = []
    while len(order):
        best = order[0]
        keep.append(best)
        rest = order[1:]
        width = np.clip(np.minimum(x2[best], x2[rest]) - np.maximum(x1[best], x1[rest]), 0, None)
        height = np.clip(np.minimum(y2[best], y2[rest]) - np.maximum(y1[best], y1[rest]), 0, None)
        inter = width * height
        with np.errstate(invalid="ignore", divide="ignore"):
            iou = inter / (areas[best] + areas[rest] - inter)
        # Suppressed where IoU > threshold; a NaN IoU (two empty boxes) suppresses nothing, as in
        # torchvision's nms.
        order = rest[~(iou > threshold)]
    return np.array(keep, dtype=np.int64)
