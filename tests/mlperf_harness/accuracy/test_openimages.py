"""RetinaNet's mAP (accuracy/openimages.py) against MLCommons' `accuracy-openimages.py`.

The script cannot be fetched where tests run (no network), so `_as_the_script` below performs its
steps one by one on the same log, each commented with the script's line it stands for (its text is
not copied), and both numbers must be equal to the last bit. Once, by hand on 2026-11-28, the real
script (mlcommons/inference master) printed the same `mAP=` line on a log of the stand-in's
AccuracyOnly run (docs/retinanet.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mlperf_harness.accuracy.openimages import score_accuracy_log
from mlperf_harness.errors import HarnessError


def _ground_truth(path: Path) -> Path:
    images = [
        {"id": i + 1, "file_name": f"{i}.jpg", "height": 600 + 10 * i, "width": 800 - 20 * i}
        for i in range(4)
    ]
    annotations: list[dict[str, Any]] = []
    rng = np.random.default_rng(3)
    for image in images:
        for _ in range(3):
            x, y = rng.uniform(0, 300, 2)
            w, h = rng.uniform(30, 200, 2)
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image["id"],
                    "category_id": int(rng.integers(0, 3)),
                    "bbox": [x, y, w, h],
                    "area": w * h,
                    "iscrowd": 0,
                }
            )
    data = {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": i, "name": str(i)} for i in range(3)],
    }
    path.write_text(json.dumps(data))
    return path


def _log(path: Path, ground_truth: dict[str, Any]) -> Path:
    """Detections near the ground truth (some off, some of the wrong class), one image without
    any, and one image logged twice (the second must be ignored)."""
    rng = np.random.default_rng(5)
    entries = []
    for index, image in enumerate(ground_truth["images"]):
        rows = []
        if index != 2:
            for ann in ground_truth["annotations"]:
                if ann["image_id"] != image["id"]:
                    continue
                x, y, w, h = np.array(ann["bbox"]) + rng.normal(0, 8, 4)
                label = ann["category_id"] if rng.random() < 0.8 else (ann["category_id"] + 1) % 3
                rows.append(
                    [
                        index,
                        y / image["height"],
                        x / image["width"],
                        (y + h) / image["height"],
                        (x + w) / image["width"],
                        rng.uniform(0.1, 1),
                        label,
                    ]
                )
        entries.append(
            {"seq_id": index, "qsl_idx": index, "data": np.array(rows, np.float32).tobytes().hex()}
        )
    entries.append({"seq_id": 9, "qsl_idx": 0, "data": np.zeros(7, np.float32).tobytes().hex()})
    path.write_text(json.dumps(entries))
    return path


def _as_the_script(accuracy_log: Path, annotations: Path, tmp: Path) -> float:
    from pycocotools.coco import COCO  # type: ignore[import-untyped]  # no stubs
    from pycocotools.cocoeval import COCOeval  # type: ignore[import-untyped]  # no stubs

    coco_gt = COCO(str(annotations))  # cocoGt = COCO(annotations_file)
    results = json.loads(accuracy_log.read_text())  # results = json.load(f)
    detections, image_ids, seen = [], set(), set()
    image_map = coco_gt.dataset["images"]  # image_map = cocoGt.dataset["images"]
    for j in results:  # for j in results:
        idx = j["qsl_idx"]
        if idx in seen:  # de-dupe: the first response of a sample counts
            continue
        seen.add(idx)
        data = np.frombuffer(bytes.fromhex(j["data"]), np.float32)
        if len(data) < 7:  # an image without results still joins image_ids
            image_ids.add(image_map[idx]["id"])
            continue
        for i in range(0, len(data), 7):  # for i in range(0, len(data), 7):
            _image_idx, ymin, xmin, ymax, xmax, score, label = data[i : i + 7]
            image = image_map[idx]  # the image is the qsl_idx's, not the logged index's
            height, width = image["height"], image["width"]
            ymin *= height  # ymin *= height ... xmax *= width: float32 by int
            xmin *= width
            ymax *= height
            xmax *= width
            detections.append(
                {
                    "image_id": image["id"],
                    "category_id": int(label),  # label = int(label); no --use-inv-map
                    "bbox": [float(xmin), float(ymin), float(xmax - xmin), float(ymax - ymin)],
                    "score": float(score),
                }
            )
            image_ids.add(image["id"])
    out = tmp / "openimages-results.json"
    out.write_text(json.dumps(detections, sort_keys=True, indent=4))  # json.dump(..., indent=4)
    coco_dt = coco_gt.loadRes(str(out))  # loaded back from the file, as the script does
    evaluation = COCOeval(coco_gt, coco_dt, iouType="bbox")
    evaluation.params.imgIds = list(image_ids)
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    return float(evaluation.stats[0])  # print("mAP={:.3f}%".format(100.0 * cocoEval.stats[0]))


def test_map_equals_the_scripts_steps(tmp_path: Path) -> None:
    annotations = _ground_truth(tmp_path / "openimages-mlperf.json")
    log = _log(tmp_path / "mlperf_log_accuracy.json", json.loads(annotations.read_text()))
    ours = score_accuracy_log(log, annotations)
    reference = _as_the_script(log, annotations, tmp_path)
    assert 0.0 < reference < 1.0
    assert ours.map_percent == 100.0 * reference
    assert ours.line() == f"mAP={100.0 * reference:.3f}%"
    assert ours.images == 4 and ours.detections == 9  # one image without detections, one repeat


def test_a_log_of_another_set_is_one_line(tmp_path: Path) -> None:
    annotations = _ground_truth(tmp_path / "openimages-mlperf.json")
    log = tmp_path / "log.json"
    log.write_text(json.dumps([{"qsl_idx": 9, "data": np.zeros(7, np.float32).tobytes().hex()}]))
    with pytest.raises(HarnessError, match="outside the 4 images"):
        score_accuracy_log(log, annotations)
