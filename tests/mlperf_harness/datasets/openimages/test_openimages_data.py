"""The OpenImages layout, its generated stand-in and the preprocessing: bad inputs in one line,
the reference transform, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mlperf_harness.benchmarks.retinanet.resources import check_interface
from mlperf_harness.datasets.openimages import synthetic
from mlperf_harness.datasets.openimages.layout import ANNOTATIONS_FILE, IMAGES_DIR, check_layout
from mlperf_harness.datasets.openimages.preprocess import (
    FP32,
    INT8,
    PreprocessedImages,
    preprocess_dataset,
)
from mlperf_harness.datasets.openimages.transform import preprocess_file
from mlperf_harness.errors import HarnessError


def _set(tmp_path: Path, count: int = 3) -> Path:
    synthetic.write_set(tmp_path / "oi", 0, "validation", range(count))
    return tmp_path / "oi"


def test_generated_set_has_the_subsets_layout(tmp_path: Path) -> None:
    data = _set(tmp_path)
    images = check_layout(data)
    assert len(images) == 3 and images.category_ids == list(range(len(synthetic.CLASSES)))
    content = json.loads((data / ANNOTATIONS_FILE).read_text())
    assert content["annotations"] and all(
        {"image_id", "category_id", "bbox", "area", "iscrowd"} <= set(a)
        for a in content["annotations"]
    )
    again = tmp_path / "again"
    synthetic.write_set(again, 0, "validation", range(3))
    for name in ("validation_000000.jpg", "validation_000002.jpg"):
        assert (data / IMAGES_DIR / name).read_bytes() == (again / IMAGES_DIR / name).read_bytes()


def test_missing_annotations_absent_and_corrupt_images_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"annotations file not found.*openimages_mlperf.sh"):
        check_layout(tmp_path / "nothing")
    data = _set(tmp_path)
    (data / IMAGES_DIR / "validation_000001.jpg").unlink()
    with pytest.raises(HarnessError, match=r"1 of the 3 images .*\(validation_000001.jpg\)") as err:
        check_layout(data)
    assert "\n" not in str(err.value)
    synthetic.write_set(data, 0, "validation", range(3))
    (data / IMAGES_DIR / "validation_000002.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(HarnessError, match=r"cannot decode image .*validation_000002.jpg"):
        preprocess_dataset(data, tmp_path / "pre", progress=False)
    # What was finished before the corrupt image is kept: fixing it redoes only that one.
    (data / IMAGES_DIR / "validation_000002.jpg").unlink()
    synthetic.write_set(data, 0, "validation", range(3))
    report = preprocess_dataset(data, tmp_path / "pre", progress=False)
    assert report.processed + report.skipped == 3 and report.skipped >= 1


def test_preprocessing_is_the_reference_transform_and_resumes(tmp_path: Path) -> None:
    data = _set(tmp_path)
    first = preprocess_dataset(data, tmp_path / "pre", (FP32, INT8), progress=False)
    assert (first.processed, first.skipped) == (3, 0)
    stored = PreprocessedImages(tmp_path / "pre")
    path = data / IMAGES_DIR / "validation_000001.jpg"
    bgr = cv2.imread(str(path))
    rgb = cv2.cvtColor(bgr.astype(np.float32), cv2.COLOR_BGR2RGB)
    expected = cv2.resize(rgb, (800, 800), interpolation=cv2.INTER_LINEAR).transpose(2, 0, 1) / 255
    np.testing.assert_allclose(stored.load([1])[0], expected, rtol=1e-6)
    np.testing.assert_array_equal(preprocess_file(path), stored.load([1])[0])
    assert stored.load([1], INT8)[0].max() <= 127
    second = preprocess_dataset(data, tmp_path / "pre", (FP32, INT8), progress=False)
    assert (second.processed, second.skipped) == (0, 3)


def test_a_model_of_another_interface_is_one_line(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["images"], ["boxes"])],
        "g",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 800, 800])],
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 3, 800, 800])],
    )
    path = tmp_path / "other.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(HarnessError, match=r"not RetinaNet's interface.*head_outputs") as err:
        check_interface(path)
    assert "\n" not in str(err.value)
