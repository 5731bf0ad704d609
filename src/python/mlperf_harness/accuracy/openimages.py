"""RetinaNet's mAP on the OpenImages MLPerf subset from LoadGen's accuracy log, as MLCommons'
`vision/classification_and_detection/tools/accuracy-openimages.py` computes it (pycocotools'
COCOeval, bbox), step for step:

1. the ground truth is `annotations/openimages-mlperf.json` (COCO format), read by pycocotools;
2. the log's responses are taken in order; a sample index seen before is skipped (the first
   response of a sample counts);
3. a response of fewer than 7 float32 values is an image without detections: its image id still
   joins the evaluated images;
4. otherwise every 7 values are [image index, ymin, xmin, ymax, xmax, score, label]; the image is
   `images[qsl_idx]` of the annotations (the logged image index is only compared with it); the
   coordinates are multiplied by that image's height and width (float32 arithmetic, as NumPy does
   on the logged values) and become a COCO box [xmin, ymin, xmax - xmin, ymax - ymin] (each a
   Python float), category id int(label), score float(score);
5. the detections go through `COCO.loadRes` (the script writes them to a JSON file first and loads
   that: the same floats, since JSON keeps a float's shortest round-trip form) and `COCOeval(gt,
   dt, "bbox")` with `params.imgIds` the images seen, then evaluate, accumulate, summarize;
6. the metric is stats[0] (AP at IoU 0.50:0.95, all areas, 100 detections), printed as
   `mAP=<100 x stats[0] to 3 places>%`: the line the submission checker reads from accuracy.txt.

The script's --use-inv-map is off for RetinaNet (labels are category ids), and so it is here.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.run_files import ACCURACY_TXT

REFERENCE_MAP = 37.55  # percent: the fp32 reference model on the full subset (MLCommons)
VALUES = 7


@dataclass(frozen=True)
class OpenImagesAccuracy:
    map_percent: float  # 100 x COCOeval stats[0]
    ap50_percent: float
    images: int  # evaluated (seen in the log)
    total_images: int  # of the annotations
    detections: int
    mismatched_indices: int  # detections whose logged image index is not their qsl_idx
    summary: str  # COCOeval.summarize()'s lines

    @property
    def complete(self) -> bool:
        return self.images == self.total_images

    def line(self) -> str:
        return f"mAP={self.map_percent:.3f}%"


def coco_detections(
    responses: Sequence[tuple[int, bytes]], images: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[int], int]:
    """Steps 2-4: the COCO detections, the image ids seen, and how many detections carried an
    image index other than their qsl_idx. `responses` are (qsl_idx, bytes) in log order."""
    detections: list[dict[str, Any]] = []
    image_ids: dict[int, None] = {}  # ordered set
    seen: set[int] = set()
    mismatched = 0
    for index, data in responses:
        if index in seen:
            continue
        seen.add(index)
        if not 0 <= index < len(images):
            raise HarnessError(
                f"accuracy log has qsl_idx {index}, outside the {len(images)} images of the "
                f"annotations (a log of another data set?)"
            )
        image = images[index]
        if len(data) % 4:
            raise HarnessError(
                f"response of sample {index} is {len(data)} bytes: not float32 values"
            )
        values = np.frombuffer(data, np.float32)
        if len(values) < VALUES:
            image_ids[int(image["id"])] = None
            continue
        if len(values) % VALUES:
            raise HarnessError(
                f"response of sample {index} holds {len(values)} float32 values: not rows of "
                f"{VALUES} [image index, ymin, xmin, ymax, xmax, score, label]"
            )
        height, width = image["height"], image["width"]
        for row in values.reshape(-1, VALUES):
            image_index, ymin, xmin, ymax, xmax, score, label = row
            mismatched += int(image_index) != index
            ymin *= height
            xmin *= width
            ymax *= height
            xmax *= width
            detections.append(
                {
                    "image_id": int(image["id"]),
                    "category_id": int(label),
                    "bbox": [float(xmin), float(ymin), float(xmax - xmin), float(ymax - ymin)],
                    "score": float(score),
                }
            )
            image_ids[int(image["id"])] = None
    return detections, list(image_ids), mismatched


def evaluate(annotations_file: Path, responses: Sequence[tuple[int, bytes]]) -> OpenImagesAccuracy:
    """Steps 1-6 over (qsl_idx, response bytes) pairs in log order."""
    from pycocotools.coco import COCO  # type: ignore[import-untyped]  # only scoring needs it; no stubs
    from pycocotools.cocoeval import COCOeval  # type: ignore[import-untyped]  # no stubs

    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        try:
            ground_truth = COCO(str(annotations_file))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise HarnessError(f"cannot read annotations {annotations_file}: {err}") from err
    images = ground_truth.dataset["images"]
    detections, image_ids, mismatched = coco_detections(responses, images)
    if not image_ids:
        raise HarnessError("the accuracy log holds no responses to score")
    summary = io.StringIO()
    with contextlib.redirect_stdout(summary):
        if detections:
            results = ground_truth.loadRes(detections)
        else:
            results = COCO()  # nothing detected: every AP is 0 (COCOeval reports -1 for none)
            results.dataset = {"images": images, "annotations": [], "categories": []}
            results.createIndex()
        evaluation = COCOeval(ground_truth, results, iouType="bbox")
        evaluation.params.imgIds = image_ids
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    stats = evaluation.stats
    return OpenImagesAccuracy(
        map_percent=100.0 * max(float(stats[0]), 0.0),
        ap50_percent=100.0 * max(float(stats[1]), 0.0),
        images=len(image_ids),
        total_images=len(images),
        detections=len(detections),
        mismatched_indices=mismatched,
        summary=summary.getvalue(),
    )


def score_accuracy_log(accuracy_log: Path, annotations_file: Path) -> OpenImagesAccuracy:
    responses = [(r.qsl_idx, r.data) for r in read_accuracy_log(accuracy_log)]
    return evaluate(annotations_file, responses)


def score_rows(
    annotations_file: Path, rows: Mapping[int, npt.NDArray[np.float32]]
) -> OpenImagesAccuracy:
    """The same score over each image's [count, 7] rows by sample index (the stand-in's build
    measures its held-out mAP this way, as an accuracy run would log them)."""
    return evaluate(annotations_file, [(i, rows[i].tobytes()) for i in sorted(rows)])


def write_accuracy_txt(log_dir: Path, accuracy: OpenImagesAccuracy) -> Path:
    path = log_dir / ACCURACY_TXT
    write_bytes_atomic(path, (accuracy.summary + accuracy.line() + "\n").encode())
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """mAP of a RetinaNet accuracy run's mlperf_log_accuracy.json."""
    parser = OneLineParser(prog="accuracy_openimages", description=main.__doc__)
    parser.add_argument("--mlperf_accuracy_file", type=Path, required=True)
    parser.add_argument(
        "--annotations",
        type=Path,
        required=True,
        help="the set's annotations/openimages-mlperf.json",
    )
    parser.add_argument("--log_dir", type=Path, help=f"also write {ACCURACY_TXT} there")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        accuracy = score_accuracy_log(args.mlperf_accuracy_file, args.annotations)
        if args.log_dir is not None:
            write_accuracy_txt(args.log_dir, accuracy)
        print(accuracy.summary, end="")
        print(accuracy.line())
        return 0

    return run_entry_point(parser.prog, run)


if __name__ == "__main__":
    raise SystemExit(main())
