"""Run under TRITON_INTERPRET=1 by test_nms_kernel_interpreted.py (a process of its own: Triton reads
that variable when the kernels are defined): RetinaNet's NMS kernels (engines/torch_retinanet/
nms_kernel.py) on the CPU against the first way, the torch fixed point (postprocess.py's rounds),
and the CPU reference (nms_op.reference_keep): keep masks bit for bit on seeded cases, and whole
detections through the postprocessing on head outputs with tied scores. Prints one line per check
and exits non-zero when one fails."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.benchmarks.retinanet.anchors import anchors_per_level
from mlperf_harness.benchmarks.retinanet.detections import NMS_THRESHOLD, SCORE_THRESHOLD
from mlperf_harness.engines.torch_retinanet import nms_kernel
from mlperf_harness.engines.torch_retinanet.nms_op import reference_keep
from mlperf_harness.engines.torch_retinanet.nms_ways import ROUNDS
from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess

IMAGES = 2
IMAGE_SIZE = 160  # the postprocessing's own test's size: every level's top-k path
CLASSES = 3
KS = (96, 160, 224, 416)  # candidates an image
INTERPRETED_TILE = (256, 16)  # the whole detections' overlap tile: few programs for the interpreter
Case = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # boxes, labels, valid (uint8)


def boxes_from(xy: torch.Tensor, wh: torch.Tensor) -> torch.Tensor:
    return torch.cat([xy, xy + wh], dim=-1).float()


def scattered(rng: torch.Generator, k: int) -> Case:
    """Boxes over a 60-pixel square, three classes, a fifth invalid: some overlap, most not."""
    xy = torch.rand(IMAGES, k, 2, generator=rng) * 60
    wh = torch.rand(IMAGES, k, 2, generator=rng) * 30 + 1
    labels = torch.randint(0, CLASSES, (IMAGES, k), generator=rng)
    valid = (torch.rand(IMAGES, k, generator=rng) > 0.2).to(torch.uint8)
    return boxes_from(xy, wh), labels, valid


def clustered(rng: torch.Generator, k: int) -> Case:
    """Jittered copies of a few boxes: long chains of overlaps, boxes suppressed by suppressed ones."""
    centres = torch.rand(IMAGES, 4, 2, generator=rng) * 40
    pick = torch.randint(0, 4, (IMAGES, k), generator=rng)
    xy = torch.gather(centres, 1, pick[..., None].expand(-1, -1, 2))
    xy = xy + torch.randn(IMAGES, k, 2, generator=rng) * 3
    wh = 20 + torch.randn(IMAGES, k, 2, generator=rng) * 2
    labels = torch.randint(0, 2, (IMAGES, k), generator=rng)
    return boxes_from(xy, wh), labels, torch.ones(IMAGES, k, dtype=torch.uint8)


def identical(rng: torch.Generator, k: int) -> Case:
    """One box, one class, every candidate: all but the first suppressed."""
    boxes = torch.tensor([10.0, 10.0, 50.0, 40.0]).expand(IMAGES, k, 4).contiguous()
    return (
        boxes,
        torch.zeros(IMAGES, k, dtype=torch.int64),
        torch.ones(IMAGES, k, dtype=torch.uint8),
    )


def identical_classes_differ(rng: torch.Generator, k: int) -> Case:
    """One box, a class each: none suppressed."""
    boxes, _, valid = identical(rng, k)
    return boxes, torch.arange(k).expand(IMAGES, k).contiguous(), valid


def disjoint(rng: torch.Generator, k: int) -> Case:
    """A row of boxes that do not touch, one class: none suppressed."""
    xy = torch.stack([torch.arange(k) * 10.0, torch.zeros(k)], -1).expand(IMAGES, k, 2)
    boxes = boxes_from(xy, torch.full((IMAGES, k, 2), 8.0))
    return (
        boxes,
        torch.zeros(IMAGES, k, dtype=torch.int64),
        torch.ones(IMAGES, k, dtype=torch.uint8),
    )


def padded(rng: torch.Generator, k: int) -> Case:
    """Clustered boxes whose tail is invalid (the postprocessing's padding and those below the
    score threshold: zero boxes of class 0 after the valid ones)."""
    boxes, labels, valid = clustered(rng, k)
    tail = k // 3
    boxes[:, -tail:] = 0.0
    labels[:, -tail:] = 0
    valid[:, -tail:] = 0
    valid[1, : k // 4] = 0  # the second image: its best candidates invalid too
    return boxes, labels, valid


def none_valid(rng: torch.Generator, k: int) -> Case:
    boxes, labels, _ = clustered(rng, k)
    return boxes, labels, torch.zeros(IMAGES, k, dtype=torch.uint8)


def at_the_threshold(rng: torch.Generator, k: int) -> Case:
    """Pairs whose IoU is exactly 0.5 (kept: the threshold is strict), pairs an ulp above, and
    empty boxes (a NaN IoU: none suppressed)."""
    base = torch.tensor([0.0, 0.0, 2.0, 1.0])
    half = torch.tensor([0.0, 0.0, 1.0, 1.0])  # IoU with base: 1 / 2
    above = torch.tensor([0.0, 0.0, 1.0000001, 1.0])
    empty = torch.tensor([5.0, 5.0, 5.0, 5.0])
    rows = [base, half, base, above, empty, empty]
    boxes = torch.stack([rows[i % len(rows)] + 3 * (i // len(rows)) for i in range(k)])
    boxes = boxes.expand(IMAGES, k, 4).contiguous()
    labels = (torch.arange(k) // len(rows)).expand(IMAGES, k).contiguous()
    return boxes, labels, torch.ones(IMAGES, k, dtype=torch.uint8)


CASES: dict[str, Callable[[torch.Generator, int], Case]] = {
    "scattered": scattered,
    "clustered": clustered,
    "all suppressed": identical,
    "none suppressed (classes)": identical_classes_differ,
    "none suppressed (disjoint)": disjoint,
    "invalid tail": padded,
    "none valid": none_valid,
    "IoU at the threshold": at_the_threshold,
}


def rounds_keep(module: GpuPostprocess, case: Case) -> tuple[torch.Tensor, bool]:
    boxes, labels, valid = case
    keep, converged = module.nms(boxes, labels, valid != 0)
    return keep.to(torch.uint8), bool(converged.all())


def check_case(name: str, case: Case, rounds: GpuPostprocess) -> bool:
    boxes, labels, valid = case
    got = nms_kernel.greedy_keep(boxes, labels, valid, NMS_THRESHOLD)
    reference = reference_keep(boxes, labels, valid)
    old, settled = rounds_keep(rounds, case)
    same = torch.equal(got, reference) and torch.equal(got, old) and settled
    k = labels.shape[1]
    print(
        f"{name}, K {k}: {'equal' if same else 'DIFFER'} "
        f"({int(got.sum())} of {int(valid.sum())} valid kept; rounds settled: {settled})"
    )
    return same


def check_detections(seed: int) -> bool:
    """The whole postprocessing, rounds against the kernels, on head outputs whose logits are on a
    coarse grid (many tied scores, in and across levels)."""
    anchors = sum(anchors_per_level(IMAGE_SIZE))
    rng = np.random.default_rng(seed)
    logits = np.round(rng.normal(-2.5, 1.5, (IMAGES, anchors, CLASSES)) * 4) / 4
    deltas = rng.normal(0, 0.2, (IMAGES, anchors, 4))
    head = torch.from_numpy(np.concatenate([deltas, logits], axis=2).astype(np.float32))
    module = GpuPostprocess(CLASSES, image_size=IMAGE_SIZE, nms=ROUNDS)
    with torch.no_grad():
        want = module(head)
        scores, boxes, labels = module.sorted_candidates(head)
        valid = scores > SCORE_THRESHOLD
        keep = nms_kernel.greedy_keep(
            boxes, labels, valid.to(torch.uint8), NMS_THRESHOLD, tile=INTERPRETED_TILE
        )
        keep = keep != 0
        got = module.rows(scores, boxes, labels, keep, valid, torch.ones_like(keep[:, 0]))
    ties = int((scores[:, 1:] == scores[:, :-1]).logical_and(valid[:, 1:]).sum())
    same = torch.equal(got, want)
    print(
        f"detections, seed {seed}: {'equal' if same else 'DIFFER'} "
        f"({int(want[:, 0, 0].sum())} detections, {ties} tied neighbours)"
    )
    return bool(same)


def main() -> int:
    rng = torch.Generator().manual_seed(0)
    good = True
    # 1.5, 2.5, 3.5 and 6.5 words: every candidate count ends inside a word; at 416 the overlap
    # kernel's tiles of rows past its first block of words return at once (the lower triangle)
    for k in KS:
        rounds = GpuPostprocess(CLASSES, image_size=IMAGE_SIZE, rounds=k, nms=ROUNDS)
        for name, make in CASES.items():
            good &= check_case(name, make(rng, k), rounds)
    for seed in range(2):
        good &= check_detections(seed)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
