"""Two outputs of RetinaNet's GPU postprocessing (engine_detections.py's layout) compared, and what
their differences are: the A/B of NMS ways and of compiled against eager (postprocess_ab.py) must
not call two outputs equal that are not, nor fail on rounding alone.

Compiled code rounds differently from eager code: Inductor fuses the decoding's products into the
sums after them (one rounding where eager has two), computes exp and sigmoid with other polynomial
approximations, and divides approximately on the GPU. So on the same head outputs, a compiled
postprocessing gives the same detections with coordinates a few float32 ulps apart (measured on the
CPU with Inductor's C++: at most 6e-8 of the image, docs/retinanet.md), and greedy NMS can decide a
pair whose IoU lies within rounding of 0.5 the other way, which changes what follows in that class.
Three verdicts, per comparison:

- EQUAL: every byte of both outputs alike.
- ROUNDING ("equal up to rounding"): both settled, and every detection of one output is in the other
  (same label, score within SCORE_RTOL, each coordinate within BOX_ATOL), except detections that
  rounding explains, each for one of these reasons:
    borderline  a detection of the same class, as good or better, in the other output overlaps it by
                an IoU within IOU_MARGIN of the NMS threshold: NMS may decide the pair either way;
    cascade     such a detection that is itself in one output only (already explained) overlaps it
                above the threshold less the margin: it removed this one in one output and not in
                the other;
    cut         the other output is full (300 detections), this one scores no better than its last,
                and the image already had an explained difference that moved its list;
    threshold   it scores within SCORE_RTOL of the score threshold (0.05);
    tie         (only where the candidates before NMS are given) the other output holds, in its
                place, another candidate of its class whose score is within SCORE_RTOL of its own
                and which overlaps it above the threshold less the margin: two candidates of equal
                score (or scores a rounding apart) that the ways put in the other order, so that
                each keeps the one it met first. Both must be candidates, distinct ones: a box that
                moved matches none, and stays a difference.
- DIFFER: anything else (a detection missing with no such reason, an image's NMS not settled).

Scores are compared relatively (SCORE_RTOL is 8 float32 ulps), coordinates absolutely (they are
fractions of the image: BOX_ATOL is 0.0008 px on the 800 px input). What the tolerances accept is
rounding, never a moved box: a box off by a pixel is a difference rounding does not explain. The
rows alone cannot tell two tied candidates kept in the other order from one box moved, hence the
tie's check against the candidates (postprocess_ab.py passes the eager way's).

NumPy only: no torch here (postprocess_ab.py passes its tensors as arrays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.retinanet.detections import (
    DETECTIONS_PER_IMAGE,
    NMS_THRESHOLD,
    SCORE_THRESHOLD,
    VALUES_PER_DETECTION,
)
from mlperf_harness.benchmarks.retinanet.engine_detections import (
    CONVERGED,
    COUNT,
    HEADER_ROWS,
    ROWS_PER_IMAGE,
)
from mlperf_harness.errors import HarnessError

SCORE_RTOL = 1e-6  # a score's relative difference: 8 float32 ulps
BOX_ATOL = 1e-6  # a coordinate's (a fraction of the image): 0.0008 px at 800 px
IOU_MARGIN = 1e-4  # an IoU this close to NMS_THRESHOLD may be decided either way

EQUAL, ROUNDING, DIFFER = "equal", "equal up to rounding", "DIFFER"
BORDERLINE, CASCADE, CUT, AT_THRESHOLD, TIE = "borderline", "cascade", "cut", "threshold", "tie"
UNEXPLAINED = "unexplained"
_BOX = slice(1, 5)  # ymin, xmin, ymax, xmax (normalised)
_SCORE, _LABEL = 5, 6

FloatRows = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Difference:
    """A detection of one output that the other lacks, and why (one of the reasons above)."""

    image: int
    side: int  # 0: the first output holds it, 1: the second
    row: int  # its place in its image's detections
    score: float
    label: int
    reason: str
    iou: float | None = None  # borderline: the pair's IoU

    def line(self) -> str:
        iou = "" if self.iou is None else f", IoU {self.iou:.6f}"
        which = ("first", "second")[self.side]
        return (
            f"image {self.image}: the {which}'s detection {self.row} (label {self.label}, score "
            f"{self.score:.7g}) only there: {self.reason}{iou}"
        )


@dataclass(frozen=True)
class Comparison:
    verdict: str
    detections: int  # in the first output
    bit_equal: int  # detections of the first whose row the second holds byte for byte, in place
    matched: int  # detections of the first matched in the second (bit-equal ones included)
    most_score_difference: float  # relative, over matched detections
    most_box_difference: float  # absolute, normalised
    differences: tuple[Difference, ...]
    unsettled: int  # images whose NMS did not settle, in either output

    def line(self) -> str:
        if self.verdict == EQUAL:
            return f"{EQUAL} ({self.detections} detections, bit for bit)"
        reasons: dict[str, int] = {}
        for difference in self.differences:
            reasons[difference.reason] = reasons.get(difference.reason, 0) + 1
        only = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        text = (
            f"{self.verdict} ({self.detections} detections: {self.bit_equal} bit for bit, "
            f"{self.matched - self.bit_equal} within rounding (scores {self.most_score_difference:.1e}"
            f" relative, boxes {self.most_box_difference:.1e}), "
            f"{len(self.differences)} in one output only{': ' + only if only else ''}"
        )
        if self.unsettled:
            text += f"; {self.unsettled} images NOT settled"
        first_bad = next((d for d in self.differences if d.reason == UNEXPLAINED), None)
        return text + (f"; first: {first_bad.line()}" if first_bad else "") + ")"


def candidate_rows(
    boxes: npt.ArrayLike, scores: npt.ArrayLike, labels: npt.ArrayLike, image_size: float
) -> list[FloatRows]:
    """Each image's candidates before NMS (boxes [N, K, 4] x1, y1, x2, y2 in pixels, scores and
    labels [N, K]) as detection rows, normalised as the engine's output is; those at or below the
    score threshold (the padding among them) left out."""
    boxes = np.asarray(boxes, dtype=np.float32)
    scores = np.asarray(scores, dtype=np.float32)
    labels = np.asarray(labels)
    out = []
    for image in range(len(scores)):
        valid = scores[image] > np.float32(SCORE_THRESHOLD)
        rows = np.zeros((int(valid.sum()), VALUES_PER_DETECTION), np.float32)
        rows[:, _BOX] = boxes[image][valid][:, [1, 0, 3, 2]] / np.float32(image_size)
        rows[:, _SCORE] = scores[image][valid]
        rows[:, _LABEL] = labels[image][valid]
        out.append(rows)
    return out


def compare_detections(
    first: npt.ArrayLike, second: npt.ArrayLike, candidates: list[FloatRows] | None = None
) -> Comparison:
    """The verdict on two engine outputs [N, 1 + 300, 7] of the same head outputs; with each
    image's candidates (candidate_rows), ties too may explain a difference."""
    a, b = _checked(first), _checked(second)
    if candidates is not None and len(candidates) != len(a):
        raise HarnessError(f"candidates of {len(candidates)} images for {len(a)} images")
    if a.shape != b.shape:
        raise HarnessError(f"detections of shapes {list(a.shape)} and {list(b.shape)} compared")
    settled = (a[:, 0, CONVERGED] == 1) & (b[:, 0, CONVERGED] == 1)
    if np.array_equal(a.view(np.uint32), b.view(np.uint32)):
        verdict = EQUAL if settled.all() else DIFFER
        count = int(a[:, 0, COUNT].sum())
        return Comparison(verdict, count, count, count, 0.0, 0.0, (), int((~settled).sum()))
    totals = np.zeros(3, dtype=np.int64)  # detections, bit-equal, matched
    most = [0.0, 0.0]  # score, box
    differences: list[Difference] = []
    for image in range(len(a)):
        rows_a = _rows(a[image])
        rows_b = _rows(b[image])
        totals[0] += len(rows_a)
        shared = min(len(rows_a), len(rows_b))
        totals[1] += int(
            (rows_a[:shared].view(np.uint32) == rows_b[:shared].view(np.uint32)).all(1).sum()
        )
        pairs = _match(rows_a, rows_b)
        totals[2] += len(pairs)
        for i, j in pairs:
            most[0] = max(most[0], _score_difference(rows_a[i, _SCORE], rows_b[j, _SCORE]))
            most[1] = max(most[1], float(np.abs(rows_a[i, _BOX] - rows_b[j, _BOX]).max()))
        pool = None if candidates is None else candidates[image]
        differences.extend(_explain(image, rows_a, rows_b, pairs, pool))
    unexplained = any(d.reason == UNEXPLAINED for d in differences)
    verdict = DIFFER if unexplained or not settled.all() else ROUNDING
    return Comparison(
        verdict,
        int(totals[0]),
        int(totals[1]),
        int(totals[2]),
        most[0],
        most[1],
        tuple(differences),
        int((~settled).sum()),
    )


def _checked(output: npt.ArrayLike) -> FloatRows:
    rows = np.ascontiguousarray(output, dtype=np.float32)
    if rows.ndim != 3 or rows.shape[1:] != (ROWS_PER_IMAGE, VALUES_PER_DETECTION):
        raise HarnessError(
            f"RetinaNet detections are [N, {ROWS_PER_IMAGE}, {VALUES_PER_DETECTION}], "
            f"got {list(rows.shape)}"
        )
    return rows


def _rows(image: FloatRows) -> FloatRows:
    count = int(image[0, COUNT])
    return image[HEADER_ROWS : HEADER_ROWS + count]


def _score_difference(x: float, y: float) -> float:
    return float(abs(x - y) / max(abs(x), abs(y), float(np.finfo(np.float32).tiny)))


def _match(rows_a: FloatRows, rows_b: FloatRows) -> list[tuple[int, int]]:
    """Pairs (i, j): detection i of the first is detection j of the second up to rounding; each
    of the first's, best first, takes the closest unmatched one of the second's that fits."""
    if not len(rows_a) or not len(rows_b):
        return []
    score_a, score_b = rows_a[:, _SCORE, None], rows_b[None, :, _SCORE]
    scale = np.maximum(np.abs(score_a), np.abs(score_b))
    box_gap = np.abs(rows_a[:, None, _BOX] - rows_b[None, :, _BOX]).max(-1)
    fits = (
        (rows_a[:, None, _LABEL] == rows_b[None, :, _LABEL])
        & (np.abs(score_a - score_b) <= SCORE_RTOL * scale)
        & (box_gap <= BOX_ATOL)
    )
    taken = np.zeros(len(rows_b), dtype=bool)
    pairs = []
    for i in np.flatnonzero(fits.any(1)):
        options = np.flatnonzero(fits[i] & ~taken)
        if len(options):
            j = int(options[np.argmin(box_gap[i, options])])
            taken[j] = True
            pairs.append((int(i), j))
    return pairs


def _candidate(detection: FloatRows, candidates: FloatRows) -> set[int]:
    """The candidates a detection is, up to rounding (label, score, box)."""
    scale = np.maximum(abs(float(detection[_SCORE])), np.abs(candidates[:, _SCORE]))
    fits = (
        (candidates[:, _LABEL] == detection[_LABEL])
        & (np.abs(candidates[:, _SCORE] - detection[_SCORE]) <= SCORE_RTOL * scale)
        & (np.abs(candidates[:, _BOX] - detection[_BOX]).max(1) <= BOX_ATOL)
    )
    return set(np.flatnonzero(fits).tolist())


def _distinct_candidates(one: FloatRows, other: FloatRows, candidates: FloatRows) -> bool:
    """Whether two detections are two different candidates: each is one, and not the same one."""
    first, second = _candidate(one, candidates), _candidate(other, candidates)
    return bool(first) and bool(second) and len(first | second) >= 2


def _iou(one: FloatRows, others: FloatRows) -> npt.NDArray[np.float64]:
    """IoU in float64 of a row's box with each of `others`' (ymin, xmin, ymax, xmax)."""
    box = one[_BOX].astype(np.float64)
    boxes = others[:, _BOX].astype(np.float64)
    height = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    width = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    inter = height * width
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    union = area + areas - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def _explain(
    image: int,
    rows_a: FloatRows,
    rows_b: FloatRows,
    pairs: list[tuple[int, int]],
    candidates: FloatRows | None,
) -> list[Difference]:
    """Each detection of one output only, with the reason rounding explains it (UNEXPLAINED where
    none does). Explanations are found best score first and grounded: a cascade or a cut needs an
    explanation found before it, never one that leans on itself."""
    sides = (rows_a, rows_b)
    matched = ({i for i, _ in pairs}, {j for _, j in pairs})
    only = [
        (side, row)
        for side in (0, 1)
        for row in range(len(sides[side]))
        if row not in matched[side]
    ]
    only.sort(key=lambda item: -float(sides[item[0]][item[1], _SCORE]))
    reasons: dict[tuple[int, int], tuple[str, float | None]] = {}
    changed = True
    while changed:  # until no further detection is explained (a cascade may need a later one)
        changed = False
        for side, row in only:
            if (side, row) in reasons:
                continue
            found = _reason(side, row, sides, matched, reasons, candidates)
            if found is not None:
                reasons[(side, row)] = found
                changed = True
    out = []
    for side, row in only:
        reason, iou = reasons.get((side, row), (UNEXPLAINED, None))
        detection = sides[side][row]
        out.append(
            Difference(
                image,
                side,
                row,
                float(detection[_SCORE]),
                int(detection[_LABEL]),
                reason,
                iou,
            )
        )
    return out


def _reason(
    side: int,
    row: int,
    sides: tuple[FloatRows, FloatRows],
    matched: tuple[set[int], set[int]],
    reasons: dict[tuple[int, int], tuple[str, float | None]],
    candidates: FloatRows | None,
) -> tuple[str, float | None] | None:
    detection = sides[side][row]
    score = float(detection[_SCORE])
    if score <= SCORE_THRESHOLD * (1 + SCORE_RTOL):
        return AT_THRESHOLD, None
    other = 1 - side
    rows = sides[other]
    if len(rows):
        # The other output's detections that could have removed it there: its class, as good.
        could = np.flatnonzero(
            (rows[:, _LABEL] == detection[_LABEL]) & (rows[:, _SCORE] >= score * (1 - SCORE_RTOL))
        )
        ious = _iou(detection, rows[could]) if len(could) else np.zeros(0)
        near = np.abs(ious - NMS_THRESHOLD) <= IOU_MARGIN
        if near.any():
            return BORDERLINE, float(ious[np.flatnonzero(near)[0]])
        if candidates is not None:
            for suppressor, iou in zip(could.tolist(), ious.tolist(), strict=True):
                if (
                    iou > NMS_THRESHOLD - IOU_MARGIN
                    and suppressor not in matched[other]
                    and _score_difference(score, float(rows[suppressor, _SCORE])) <= SCORE_RTOL
                    and _distinct_candidates(detection, rows[suppressor], candidates)
                ):
                    return TIE, None
        for suppressor, iou in zip(could.tolist(), ious.tolist(), strict=True):
            if iou > NMS_THRESHOLD - IOU_MARGIN and (other, suppressor) in reasons:
                return CASCADE, None
        full = len(rows) == DETECTIONS_PER_IMAGE
        moved = any(reason in (BORDERLINE, CASCADE, TIE) for reason, _ in reasons.values())
        if full and moved and score <= float(rows[-1, _SCORE]) * (1 + SCORE_RTOL):
            return CUT, None
    return None
