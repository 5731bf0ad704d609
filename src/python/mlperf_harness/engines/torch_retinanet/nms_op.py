"""RetinaNet's greedy NMS (nms_kernel.py) as a torch operator that torch.export and AOTInductor see:
`mlperf_retinanet::greedy_keep` is a `torch.library.triton_op`, so AOTInductor compiles its two
Triton kernels into the engine package with the network. On the CPU the same operator runs
`reference_keep` (greedy NMS over the dense pair matrix, one candidate at a time): the CPU tests of
the whole postprocessing use it, and it states what the kernels compute.

Imports torch and triton: GPU hosts and the development environment only.
"""

from __future__ import annotations

from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
from torch.library import triton_op, wrap_triton  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.benchmarks.retinanet.detections import NMS_THRESHOLD
from mlperf_harness.engines.torch_retinanet import nms_kernel


def suppression_pairs(boxes: Any, labels: Any, valid: Any) -> Any:
    """bool [N, K (box i), K (box j)]: box j, better than i (j < i) and valid, of i's class, overlaps
    i by IoU above the threshold (a NaN IoU, of two empty boxes, suppresses nothing, as on the
    host). Candidates sorted best first; the host's float32 arithmetic, in its order."""
    k = labels.shape[1]
    x1, y1, x2, y2 = boxes.unbind(-1)
    area = (x2 - x1) * (y2 - y1)
    width = (
        torch.minimum(x2[:, :, None], x2[:, None, :])
        - torch.maximum(x1[:, :, None], x1[:, None, :])
    ).clamp(min=0)
    height = (
        torch.minimum(y2[:, :, None], y2[:, None, :])
        - torch.maximum(y1[:, :, None], y1[:, None, :])
    ).clamp(min=0)
    inter = width * height
    iou = inter / (area[:, None, :] + area[:, :, None] - inter)
    index = torch.arange(k, device=labels.device)
    better = index[None, :] < index[:, None]  # [i, j]: j < i
    return (
        (iou > NMS_THRESHOLD)
        & (labels[:, :, None] == labels[:, None, :])
        & better[None]
        & valid[:, None, :]
    )


@triton_op("mlperf_retinanet::greedy_keep", mutates_args=())  # type: ignore[untyped-decorator]
def greedy_keep(boxes: torch.Tensor, labels: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """uint8 [N, K]: 1 where greedy per-class NMS keeps the candidate (sorted best first: boxes fp32
    [N, K, 4], labels int64 [N, K], valid uint8 [N, K])."""
    return nms_kernel.greedy_keep(boxes, labels, valid, NMS_THRESHOLD, wrap_triton)


@greedy_keep.register_kernel("cpu")  # type: ignore[untyped-decorator]
def reference_keep(boxes: torch.Tensor, labels: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Greedy NMS as the host runs it: a valid candidate is kept unless a kept better one of its
    class overlaps it above the threshold."""
    pairs = suppression_pairs(boxes, labels, valid != 0)
    keep = torch.zeros_like(valid, dtype=torch.bool)
    for i in range(labels.shape[1]):
        keep[:, i] = (valid[:, i] != 0) & ~(pairs[:, i, :i] & keep[:, :i]).any(dim=1)
    return keep.to(torch.uint8)
