"""RetinaNet's geometry at MLPerf's 800x800 input: the pyramid's grid sizes, its anchors, and the
box coder, as MLCommons' reference model (MLPerf Training's single_stage_detector RetinaNet, a
torchvision RetinaNet) computes them; written from its published behaviour, not copied.

- Levels P3..P7 at strides 8..128 of the convolutions: grids 100, 50, 25, 13, 7 for 800 px.
- Anchor sizes per level (x, int(x 2^(1/3)), int(x 2^(2/3))) for x in 32, 64, 128, 256, 512, and
  aspect ratios (height / width) 0.5, 1, 2: nine anchors per position, ratio-major (for each ratio,
  the three sizes), each a box (-w/2, -h/2, w/2, h/2) rounded half-to-even in float32, with
  h = size sqrt(ratio), w = size / sqrt(ratio).
- The anchor grid's stride is the image size divided by the grid size, in integers (torchvision's
  AnchorGenerator): 8, 16, 32, 61 and 114 at 800 px, not 64 and 128. Positions are row-major
  (y outer, x inner), the nine anchors innermost: the order of the heads' outputs.
- Box coder weights (1, 1, 1, 1); log-size deltas clamped at log(1000 / 16) before exp.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

Float32Array = npt.NDArray[np.float32]

IMAGE_SIZE = 800  # MLPerf's RetinaNet input: 800x800 (openimages-800-retinanet)
ANCHOR_BASES = (32, 64, 128, 256, 512)
ANCHOR_SIZES = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in ANCHOR_BASES)
ASPECT_RATIOS = (0.5, 1.0, 2.0)
ANCHORS_PER_POSITION = len(ASPECT_RATIOS) * 3
BOX_XFORM_CLIP = math.log(1000.0 / 16)


def _conv_out(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def grid_sizes(image_size: int = IMAGE_SIZE) -> tuple[int, ...]:
    """P3..P7's side for a square input: the stem (7x7/2, max pool 3x3/2), the three strided
    stages, then P6 and P7 (3x3/2 each)."""
    size = _conv_out(_conv_out(image_size, 7, 2, 3), 3, 2, 1)  # C2
    sides = []
    for _ in range(3):  # C3, C4, C5
        size = _conv_out(size, 3, 2, 1)
        sides.append(size)
    for _ in range(2):  # P6, P7
        size = _conv_out(size, 3, 2, 1)
        sides.append(size)
    return tuple(sides)


def base_anchors(sizes: tuple[int, ...]) -> Float32Array:
    """The nine [x1, y1, x2, y2] offsets of one level's anchors around a position."""
    scales = np.asarray(sizes, dtype=np.float32)
    h_ratios = np.sqrt(np.asarray(ASPECT_RATIOS, dtype=np.float32))
    w_ratios = np.float32(1) / h_ratios
    ws = (w_ratios[:, None] * scales[None, :]).reshape(-1)
    hs = (h_ratios[:, None] * scales[None, :]).reshape(-1)
    base: Float32Array = np.round(np.stack([-ws, -hs, ws, hs], axis=1) / np.float32(2))
    return base.astype(np.float32)


def level_anchors(image_size: int = IMAGE_SIZE) -> list[Float32Array]:
    """Each level's anchors, [grid² x 9, 4] as x1, y1, x2, y2 in input pixels."""
    anchors = []
    for side, sizes in zip(grid_sizes(image_size), ANCHOR_SIZES, strict=True):
        stride = image_size // side
        shifts = np.arange(side, dtype=np.float32) * np.float32(stride)
        shift_y, shift_x = np.meshgrid(shifts, shifts, indexing="ij")
        sx, sy = shift_x.reshape(-1), shift_y.reshape(-1)
        grid = np.stack([sx, sy, sx, sy], axis=1)
        anchors.append((grid[:, None, :] + base_anchors(sizes)[None, :, :]).reshape(-1, 4))
    return anchors


def anchors_per_level(image_size: int = IMAGE_SIZE) -> tuple[int, ...]:
    return tuple(side * side * ANCHORS_PER_POSITION for side in grid_sizes(image_size))


def decode(deltas: Float32Array, anchors: Float32Array) -> Float32Array:
    """Box regression [M, 4] (dx, dy, dw, dh) applied to anchors [M, 4] -> boxes x1, y1, x2, y2."""
    widths = anchors[:, 2] - anchors[:, 0]
    heights = anchors[:, 3] - anchors[:, 1]
    ctr_x = anchors[:, 0] + np.float32(0.5) * widths
    ctr_y = anchors[:, 1] + np.float32(0.5) * heights
    dw = np.minimum(deltas[:, 2], np.float32(BOX_XFORM_CLIP))
    dh = np.minimum(deltas[:, 3], np.float32(BOX_XFORM_CLIP))
    pred_ctr_x = deltas[:, 0] * widths + ctr_x
    pred_ctr_y = deltas[:, 1] * heights + ctr_y
    half_w = np.float32(0.5) * np.exp(dw) * widths
    half_h = np.float32(0.5) * np.exp(dh) * heights
    boxes: Float32Array = np.stack(
        [pred_ctr_x - half_w, pred_ctr_y - half_h, pred_ctr_x + half_w, pred_ctr_y + half_h],
        axis=1,
    )
    return boxes.astype(np.float32)


def encode(boxes: Float32Array, anchors: Float32Array) -> Float32Array:
    """The deltas that `decode` turns `anchors` into `boxes` with (what the heads are fitted to)."""
    widths = anchors[:, 2] - anchors[:, 0]
    heights = anchors[:, 3] - anchors[:, 1]
    ctr_x = anchors[:, 0] + 0.5 * widths
    ctr_y = anchors[:, 1] + 0.5 * heights
    gt_w = boxes[:, 2] - boxes[:, 0]
    gt_h = boxes[:, 3] - boxes[:, 1]
    gt_x = boxes[:, 0] + 0.5 * gt_w
    gt_y = boxes[:, 1] + 0.5 * gt_h
    deltas: Float32Array = np.stack(
        [
            (gt_x - ctr_x) / widths,
            (gt_y - ctr_y) / heights,
            np.log(gt_w / widths),
            np.log(gt_h / heights),
        ],
        axis=1,
    )
    return deltas.astype(np.float32)


def box_iou(a: Float32Array, b: Float32Array) -> npt.NDArray[np.float32]:
    """IoU of every box of `a` [M, 4] with every box of `b` [N, 4]: [M, N]."""
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    left_top = np.maximum(a[:, None, :2], b[None, :, :2])
    right_bottom = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(right_bottom - left_top, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    iou: Float32Array = inter / (area_a[:, None] + area_b[None, :] - inter)
    return iou.astype(np.float32)
