"""The raw KiTS19 layout: the inference case list, case_00400 from case_00185, and one line for
every missing or malformed case (real NIfTI files written with nibabel)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from one_line_errors import raised_line

from mlperf_harness.datasets.kits19.layout import (
    IMAGING_NAME,
    INFERENCE_CASES,
    SEGMENTATION_NAME,
    check_layout,
    read_case,
    write_raw_case,
)
from mlperf_harness.datasets.kits19.nifti import write_nifti_gz


def _affine(spacing: tuple[float, float, float]) -> npt.NDArray[Any]:
    z, y, x = spacing  # KiTS19's: array axes (z, y, x), x and y flipped
    return np.array([[0, 0, -x, 0], [0, -y, 0, 0], [-z, 0, 0, 0], [0, 0, 0, 1.0]])


def _write(case_dir: Path, shape: tuple[int, int, int] = (6, 8, 9)) -> None:
    image = np.full(shape, 40, dtype=np.int16)
    label = np.zeros(shape, dtype=np.uint8)
    label[2:4, 3:5, 3:6] = 1
    label[3, 4, 4] = 2
    write_raw_case(case_dir, image, label, _affine((3.0, 0.8, 0.7)))


def test_inference_cases_are_the_references_43() -> None:
    assert len(INFERENCE_CASES) == 43 and len(set(INFERENCE_CASES)) == 43
    assert INFERENCE_CASES[0] == "case_00000" and INFERENCE_CASES[-1] == "case_00400"
    assert "case_00185" in INFERENCE_CASES and list(INFERENCE_CASES) == sorted(INFERENCE_CASES)


def test_case_00400_is_read_from_case_00185_when_absent(tmp_path: Path) -> None:
    for case in INFERENCE_CASES[:-1]:
        (tmp_path / case).mkdir()
        for name in (IMAGING_NAME, SEGMENTATION_NAME):
            (tmp_path / case / name).write_bytes(b"x")  # presence is all check_layout looks at
    layout = check_layout(tmp_path)
    assert layout.is_inference_set and layout.cases == list(INFERENCE_CASES)
    assert layout.sources["case_00400"] == tmp_path / "case_00185"
    (tmp_path / "case_00400").mkdir()  # a real copy (the Makefile's) is used when there
    for name in (IMAGING_NAME, SEGMENTATION_NAME):
        (tmp_path / "case_00400" / name).write_bytes(b"y")
    assert check_layout(tmp_path).sources["case_00400"] == tmp_path / "case_00400"


def test_missing_cases_are_named_with_where_to_get_kits19(tmp_path: Path) -> None:
    _write(tmp_path / "case_00000")
    (tmp_path / "case_00003").mkdir()
    message = raised_line(check_layout, tmp_path)
    assert "lacks 42 of its 43 cases" in message
    assert "case_00003 (no imaging.nii.gz)" in message and "case_00005 (no directory)" in message
    assert "and 39 more" in message and "github.com/neheller/kits19" in message
    assert "starter_code.get_imaging" in message
    assert "is not a directory" in raised_line(check_layout, tmp_path / "nowhere")


def test_empty_file_and_bad_case_names(tmp_path: Path) -> None:
    _write(tmp_path / "case_00001")
    (tmp_path / "case_00001" / SEGMENTATION_NAME).write_bytes(b"")
    assert "segmentation.nii.gz is empty" in raised_line(check_layout, tmp_path, ["case_00001"])
    assert "case_ and 5 digits" in raised_line(check_layout, tmp_path, ["case_1"])
    assert "twice" in raised_line(check_layout, tmp_path, ["case_00001", "case_00001"])


def test_read_case_reads_what_was_written(tmp_path: Path) -> None:
    _write(tmp_path / "case_00001")
    raw = read_case(tmp_path / "case_00001")
    assert raw.image.dtype == np.float32 and raw.label.dtype == np.uint8
    assert raw.image.shape == raw.label.shape == (6, 8, 9)
    assert np.all(raw.image == 40)
    assert np.count_nonzero(raw.label == 1) == 11 and np.count_nonzero(raw.label == 2) == 1
    # The header's float32 spacing, as the reference reads it.
    assert raw.spacing == tuple(np.array([3.0, 0.8, 0.7], dtype=np.float32).tolist())
    # NIfTI keeps the affine (sform) in float32.
    np.testing.assert_array_equal(raw.affine, _affine((3.0, 0.8, 0.7)).astype(np.float32))


def test_corrupt_and_truncated_files_are_one_line(tmp_path: Path) -> None:
    case = tmp_path / "case_00001"
    _write(case)
    image = case / IMAGING_NAME
    whole = image.read_bytes()
    image.write_bytes(whole[: len(whole) // 2])
    assert str(image) in raised_line(read_case, case)
    image.write_bytes(b"not a NIfTI file at all")
    assert str(image) in raised_line(read_case, case)
    image.write_bytes(gzip.compress(b"\0" * 400))
    assert str(image) in raised_line(read_case, case)
    image.unlink()
    assert "is missing" in raised_line(read_case, case)


def test_inconsistent_cases_are_one_line(tmp_path: Path) -> None:
    case = tmp_path / "case_00001"
    _write(case)
    write_nifti_gz(case / SEGMENTATION_NAME, np.zeros((6, 8, 10), np.uint8), np.eye(4))
    assert "differ in shape" in raised_line(read_case, case)
    write_nifti_gz(case / SEGMENTATION_NAME, np.full((6, 8, 9), 3, np.uint8), np.eye(4))
    assert "holds labels 3 to 3, not 0 (background)" in raised_line(read_case, case)
