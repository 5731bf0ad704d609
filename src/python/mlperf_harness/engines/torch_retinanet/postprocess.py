"""RetinaNet's postprocessing on the GPU, batched and of fixed shapes, so that it compiles into the
engine with the network and replays under a CUDA graph: the same detections as the host's
(benchmarks/retinanet/detections.py, MLCommons' reference), without a data-dependent shape.

Per image and pyramid level, the TOPK_CANDIDATES best class logits (over anchors x classes,
sorted; on the finest levels found among the rows of the anchors of highest maximum: level_top),
valid where their sigmoid exceeds the score threshold (the top k of those above it, as the host
takes); each decoded from its anchor and clipped. Over all levels' candidates,
sorted by score: per-class NMS, the 300 best kept.

NMS runs one of two ways (nms_ways.py, chosen when the engine is built; both greedy NMS's result):

- scan (the default): two Triton kernels, the pairs' suppression bits and a walk per image in score
  order (nms_kernel.py), as one operator the export compiles in (nms_op.py). Always settled.
- rounds: greedy NMS is sequential (a box is kept unless a KEPT better box of its class overlaps
  it), which a fixed-shape torch graph cannot loop over box by box. It is computed as the fixed
  point of keep_i = valid_i and not any_{j < i} (keep_j and S_ji), S_ji = box j (better) suppresses
  box i (same class, IoU above 0.5): Cluster-NMS (Zheng et al., 2021), iterated from keep = valid.
  Box i's value is final once all j < i are, so round t settles at least the first t boxes, and the
  fixed point is unique and equals greedy NMS; in practice a few rounds settle every box (chains
  of suppression are short). NMS_ROUNDS rounds run, then one more tells whether the point was
  reached: the header row says so, and the host refuses an image where it was not
  (engine_detections.py). S is kept as bits (32 per int64 word, along j), so a round reads
  K x K / 8 bytes per image, not K x K: with K = 5,000 candidates, 3 MB instead of 25.

Imports torch and triton: only the engine builder (and the A/B) imports this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.benchmarks.retinanet.anchors import BOX_XFORM_CLIP, IMAGE_SIZE, level_anchors
from mlperf_harness.benchmarks.retinanet.detections import (
    BOX_VALUES,
    DETECTIONS_PER_IMAGE,
    SCORE_THRESHOLD,
    TOPK_CANDIDATES,
    VALUES_PER_DETECTION,
)
from mlperf_harness.benchmarks.retinanet.engine_detections import (
    CANDIDATES,
    CONVERGED,
    COUNT,
    HEADER_ROWS,
)
from mlperf_harness.engines.torch_retinanet.nms_op import greedy_keep, suppression_pairs
from mlperf_harness.engines.torch_retinanet.nms_ways import DEFAULT_NMS, SCAN, check_nms

NMS_ROUNDS = 24
BITS = 32  # suppression bits per int64 word: below the sign bit, so a sum of them is their OR


class GpuPostprocess(torch.nn.Module):  # type: ignore[misc]
    """Head outputs [N, anchors, 4 + classes] (any float dtype) -> detections [N, 1 + 300, 7]; or,
    by `detections`, each level's box deltas [N, level's anchors, 4] and class logits [N, level's
    anchors, classes] as they lie (no concatenated copy of them)."""

    def __init__(
        self,
        classes: int,
        image_size: int = IMAGE_SIZE,
        rounds: int = NMS_ROUNDS,
        nms: str = DEFAULT_NMS,
    ) -> None:
        super().__init__()
        anchors = level_anchors(image_size)
        self.classes = classes
        self.image_size = image_size
        self.rounds = rounds
        self.way = check_nms(nms)
        # Per level: its first anchor, its anchors, the candidates taken from it.
        self.levels: list[tuple[int, int, int]] = []
        start = 0
        for level in anchors:
            self.levels.append((start, len(level), min(TOPK_CANDIDATES, len(level) * classes)))
            start += len(level)
        self.anchor_count = start
        taken = sum(k for _, _, k in self.levels)
        self.candidates = -(-taken // BITS) * BITS  # padded to whole words
        self.register_buffer("anchors", torch.from_numpy(np.concatenate(anchors)))
        self.register_buffer("bit_values", torch.tensor([1 << b for b in range(BITS)]))

    def forward(self, head: Any) -> Any:
        return self.detections(self.split(head))

    def detections(self, levels: list[tuple[Any, Any]]) -> Any:
        """Detections of each level's (box deltas, class logits)."""
        scores, boxes, labels = self.sorted_level_candidates(levels)
        valid = scores > SCORE_THRESHOLD
        keep, converged = self.nms(boxes, labels, valid)
        return self.rows(scores, boxes, labels, keep, valid, converged)

    def split(self, head: Any) -> list[tuple[Any, Any]]:
        """Each level's (box deltas, class logits) of the concatenated head outputs: views."""
        return [
            (
                head[:, start : start + count, :BOX_VALUES],
                head[:, start : start + count, BOX_VALUES:],
            )
            for start, count, _ in self.levels
        ]

    def sorted_candidates(self, head: Any) -> tuple[Any, Any, Any]:
        """candidates_of's of the concatenated head outputs, sorted (sorted_level_candidates)."""
        return self.sorted_level_candidates(self.split(head))

    def sorted_level_candidates(self, levels: list[tuple[Any, Any]]) -> tuple[Any, Any, Any]:
        """candidates_of's, sorted by score, best first (stable: ties keep their order)."""
        scores, boxes, labels = self.candidates_of(levels)
        scores, order = torch.sort(scores, dim=1, descending=True, stable=True)
        boxes = torch.gather(boxes, 1, order.unsqueeze(-1).expand(-1, -1, 4))
        labels = torch.gather(labels, 1, order)
        return scores, boxes, labels

    def candidates_of(self, levels: list[tuple[Any, Any]]) -> tuple[Any, Any, Any]:
        """Every level's best candidates, [N, K] scores (those below the threshold, and the
        padding, at -1), [N, K, 4] boxes (x1, y1, x2, y2, clipped) and [N, K] labels."""
        if len(levels) != len(self.levels):
            raise ValueError(f"{len(levels)} levels of head outputs, not {len(self.levels)}")
        batch = levels[0][0].shape[0]
        all_scores, all_boxes, all_labels = [], [], []
        for (level_deltas, logits), (start, _, taken) in zip(levels, self.levels, strict=True):
            top, anchor, label = self.level_top(logits, taken)
            deltas = torch.gather(
                level_deltas, 1, anchor.unsqueeze(-1).expand(-1, -1, BOX_VALUES)
            ).float()
            all_boxes.append(self.decode(deltas, self.anchors[anchor + start]))
            all_scores.append(torch.sigmoid(top.float()))
            all_labels.append(label)
        padding = self.candidates - sum(taken for _, _, taken in self.levels)
        scores = torch.cat(all_scores, dim=1)
        scores = torch.where(scores > SCORE_THRESHOLD, scores, torch.full_like(scores, -1.0))
        boxes = torch.cat(all_boxes, dim=1)
        labels = torch.cat(all_labels, dim=1)
        if padding:
            scores = torch.cat([scores, scores.new_full((batch, padding), -1.0)], dim=1)
            boxes = torch.cat([boxes, boxes.new_zeros((batch, padding, 4))], dim=1)
            labels = torch.cat([labels, labels.new_zeros((batch, padding))], dim=1)
        return scores, boxes, labels

    def level_top(self, logits: Any, taken: int) -> tuple[Any, Any, Any]:
        """The `taken` best class logits of one level's [N, anchors, classes], sorted: their values,
        anchors and classes, [N, taken] each.

        Where the level has more anchors than `taken` (the finest: 90,000 anchors x 264 classes,
        24 million logits an image), first the `taken` anchors of highest maximum over classes,
        then the best pairs among their rows: the same values as one top-k over every pair, at a
        fraction of its cost (on a CPU torch, 88 against 1,340 ms for two real-size images). Every
        pair among the best `taken` lies in an anchor whose maximum is at least the `taken`-th
        best pair's value, and at most `taken` anchors have a maximum above it, so those anchors
        are among the ones taken; where maxima tie at that value, the anchors taken hold enough
        pairs of it. Which of several equal logits is taken is unspecified either way (as in
        torch.topk, and in the host's argpartition)."""
        batch, count, classes = logits.shape
        if count <= taken:
            top, flat = torch.topk(logits.reshape(batch, -1), taken, dim=1)
            anchor = torch.div(flat, classes, rounding_mode="floor")
            return top, anchor, flat - anchor * classes
        best = torch.topk(logits.amax(dim=2), taken, dim=1).indices
        rows = torch.gather(logits, 1, best.unsqueeze(-1).expand(-1, -1, classes))
        top, flat = torch.topk(rows.reshape(batch, -1), taken, dim=1)
        row = torch.div(flat, classes, rounding_mode="floor")
        return top, torch.gather(best, 1, row), flat - row * classes

    def decode(self, deltas: Any, anchors: Any) -> Any:
        """anchors.decode's arithmetic, in the same order, then clipped to the image."""
        widths = anchors[..., 2] - anchors[..., 0]
        heights = anchors[..., 3] - anchors[..., 1]
        ctr_x = anchors[..., 0] + 0.5 * widths
        ctr_y = anchors[..., 1] + 0.5 * heights
        dw = torch.clamp(deltas[..., 2], max=BOX_XFORM_CLIP)
        dh = torch.clamp(deltas[..., 3], max=BOX_XFORM_CLIP)
        pred_x = deltas[..., 0] * widths + ctr_x
        pred_y = deltas[..., 1] * heights + ctr_y
        half_w = 0.5 * torch.exp(dw) * widths
        half_h = 0.5 * torch.exp(dh) * heights
        boxes = torch.stack(
            [pred_x - half_w, pred_y - half_h, pred_x + half_w, pred_y + half_h], -1
        )
        return torch.clamp(boxes, 0.0, float(self.image_size))

    def suppression_bits(self, boxes: Any, labels: Any, valid: Any) -> Any:
        """[N, K (box i), K / 32] int64: bit j of word w set where box 32 w + j suppresses box i
        (nms_op.suppression_pairs)."""
        batch, k = labels.shape
        suppresses = suppression_pairs(boxes, labels, valid)
        words = suppresses.reshape(batch, k, k // BITS, BITS).long() * self.bit_values
        return words.sum(-1)

    def nms(self, boxes: Any, labels: Any, valid: Any) -> tuple[Any, Any]:
        """(keep [N, K] bool, converged [N] bool) for candidates sorted best first."""
        if self.way == SCAN:
            keep = greedy_keep(boxes, labels, valid.to(torch.uint8)) != 0
            return keep, torch.ones_like(keep[:, 0])
        bits = self.suppression_bits(boxes, labels, valid)
        keep = valid
        for _ in range(self.rounds):
            keep = self._round(bits, keep, valid)
        settled = self._round(bits, keep, valid)
        converged = (settled == keep).all(dim=1)
        return settled, converged

    def _round(self, bits: Any, keep: Any, valid: Any) -> Any:
        batch, k = keep.shape
        keep_words = (keep.reshape(batch, k // BITS, BITS).long() * self.bit_values).sum(-1)
        hit = (torch.bitwise_and(bits, keep_words[:, None, :]) != 0).any(dim=-1)
        return valid & ~hit

    def rows(
        self, scores: Any, boxes: Any, labels: Any, keep: Any, valid: Any, converged: Any
    ) -> Any:
        """The output: per image a header row, then its best DETECTIONS_PER_IMAGE kept."""
        batch = scores.shape[0]
        kept_scores = torch.where(keep, scores, torch.full_like(scores, -1.0))
        best, pick = torch.topk(kept_scores, DETECTIONS_PER_IMAGE, dim=1)
        present = best > SCORE_THRESHOLD
        picked = torch.gather(boxes, 1, pick.unsqueeze(-1).expand(-1, -1, 4))
        size = float(self.image_size)
        columns = [
            torch.zeros_like(best),
            picked[..., 1] / size,
            picked[..., 0] / size,
            picked[..., 3] / size,
            picked[..., 2] / size,
            best,
            torch.gather(labels, 1, pick).float(),
        ]
        detections = torch.where(
            present[..., None], torch.stack(columns, -1), torch.zeros_like(best)[..., None]
        )
        header_values = {
            COUNT: present.sum(dim=1).float(),
            CONVERGED: converged.float(),
            CANDIDATES: valid.sum(dim=1).float(),
        }
        zero = best.new_zeros(batch)
        header = torch.stack(
            [header_values.get(column, zero) for column in range(VALUES_PER_DETECTION)], -1
        )
        return torch.cat([header.reshape(batch, HEADER_ROWS, VALUES_PER_DETECTION), detections], 1)
