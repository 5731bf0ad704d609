"""The 3D-UNet stand-in: generated cases through the real KiTS19 reader and preprocessing, the
U-Net's ONNX interface in ONNX Runtime, and (slow) the whole build with its measured DICE."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from mlperf_harness.benchmarks.unet3d import stand_in, stand_in_model, stand_in_volumes
from mlperf_harness.benchmarks.unet3d.build_stand_in_model import session
from mlperf_harness.datasets.kits19.layout import read_case
from mlperf_harness.datasets.kits19.transform import preprocess_case
from mlperf_harness.errors import HarnessError


def test_generated_cases_are_deterministic_and_hold_every_class() -> None:
    spec, image, labels = stand_in_volumes.generate_case(0, 3)
    again = stand_in_volumes.generate_case(0, 3)
    assert again[0] == spec and np.array_equal(again[1], image) and np.array_equal(again[2], labels)
    assert image.dtype == np.int16 and labels.dtype == np.uint8 and image.shape == spec.shape
    counts = np.bincount(labels.ravel(), minlength=3)
    assert len(counts) == 3 and counts.min() > 0
    # HU-like: air, and organs inside the clip range, so clipping and normalising both matter.
    assert image.min() <= -900 and -79 < np.median(image[labels == 1]) < 304
    other = stand_in_volumes.generate_case(1, 3)[0]
    assert other.spacing != spec.spacing


def test_a_written_case_reads_back_and_preprocesses_to_window_multiples(tmp_path: Path) -> None:
    (spec,) = stand_in_volumes.write_cases(tmp_path, 0, [5])
    case = read_case(tmp_path / spec.name)
    assert case.spacing == pytest.approx(spec.spacing, rel=1e-6)  # pixdim, in array-axis order
    assert case.image.shape == spec.shape
    image, label = preprocess_case(case.image, case.label, case.spacing)
    assert image.shape == label.shape and image.shape[0] == 1
    assert all(size in (128, 192) for size in image.shape[1:])
    assert image.min() >= -2.35 and image.max() <= 2.65  # clipped and normalised
    assert set(np.unique(label)) == {0, 1, 2}
    # A second write keeps the case: same bytes on disk.
    before = (tmp_path / spec.name / "imaging.nii.gz").stat().st_mtime_ns
    stand_in_volumes.write_cases(tmp_path, 0, [5])
    assert (tmp_path / spec.name / "imaging.nii.gz").stat().st_mtime_ns == before


def test_the_unet_has_the_official_interface_and_topology() -> None:
    width = stand_in_model.UNetWidth(16)
    weights = stand_in_model.random_weights(width, 0)
    model = stand_in_model.unet_model(weights, width, "test", {"k": "v"})
    graph = model.graph
    assert [i.name for i in graph.input] == ["input"] and [o.name for o in graph.output] == [
        "output"
    ]
    ops = [node.op_type for node in graph.node]
    # 2 input convs, 5 x 2 down, 5 x 2 up, the output layer; 5 transposed convs; 22 norms
    assert ops.count("Conv") == 2 + 10 + 10 + 1
    assert ops.count("ConvTranspose") == 5 and ops.count("Concat") == 5
    assert ops.count("InstanceNormalization") == ops.count("Relu") == 22
    windows = np.random.default_rng(0).standard_normal((2, 1, 128, 128, 128)).astype(np.float32)
    (output,) = session(model).run(["output"], {"input": windows})
    assert output.shape == (2, 3, 128, 128, 128) and output.dtype == np.float32


def test_widths_follow_the_reference_filters() -> None:
    assert stand_in_model.REAL_WIDTH.filters == (32, 64, 128, 256, 320)
    assert stand_in_model.STAND_IN_WIDTH.filters == (4, 8, 16, 32, 40)
    assert stand_in_model.parameter_count(stand_in_model.REAL_WIDTH) > 30_000_000
    with pytest.raises(HarnessError, match="divisor"):
        stand_in_model.weight_shapes(stand_in_model.UNetWidth(0))


@pytest.mark.slow
def test_the_stand_in_builds_once_reaches_its_dice_and_is_marked(tmp_path: Path) -> None:
    built = stand_in.ensure_stand_in(tmp_path, progress=False)
    record = built.record
    assert record.heldout_mean_dice >= stand_in.REQUIRED_MEAN_DICE
    assert record.heldout_cases == len(stand_in.INFERENCE_CASE_INDICES)
    assert record.note == stand_in.NOT_VALID
    assert stand_in.is_stand_in_model(onnx.load(built.model))
    saved = json.loads((built.model.parent / stand_in.RECORD_FILE_NAME).read_text())
    assert saved["heldout_mean_dice"] == record.heldout_mean_dice
    assert stand_in.ensure_stand_in(tmp_path, progress=False) == built  # found, not rebuilt
