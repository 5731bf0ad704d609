"""Preprocessing a data directory of generated NIfTI cases into the reference's layout: what is
written, that it reads back as preprocess_case made it, that done cases are not redone, and that a
bad case or a damaged store is one line."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import nibabel
import numpy as np
import pytest
from one_line_errors import raised_line

from mlperf_harness.datasets.kits19.layout import IMAGING_NAME, read_case, write_raw_case
from mlperf_harness.datasets.kits19.preprocess import preprocess_dataset
from mlperf_harness.datasets.kits19.store import INDEX_NAME, MANIFEST_NAME, load_preprocessed
from mlperf_harness.datasets.kits19.transform import preprocess_case, reshaped_affine

CASES = ["case_00001", "case_00002", "case_00185", "case_00400"]
# Sizes and spacings that give 128, 192 and a crop along some axis after resampling.
_RAW = {
    "case_00001": ((20, 60, 70), (3.0, 1.5, 1.3), np.int16),
    "case_00002": ((110, 30, 60), (2.6, 1.2, 3.0), np.float32),
    "case_00185": ((40, 50, 60), (5.0, 0.8, 0.8), np.float64),
}


def _write_case(
    case_dir: Path, shape: tuple[int, int, int], spacing: tuple[float, ...], dtype: type
) -> None:
    rng = np.random.default_rng(len(case_dir.name) + shape[0])
    z, y, x = np.meshgrid(*(np.linspace(-1, 1, n) for n in shape), indexing="ij")
    label = np.zeros(shape, np.uint8)
    label[z**2 / 0.4 + (y - 0.2) ** 2 / 0.2 + (x - 0.3) ** 2 / 0.1 < 1] = 1
    label[z**2 / 0.1 + (y - 0.2) ** 2 / 0.05 + (x - 0.3) ** 2 / 0.03 < 1] = 2
    image = np.where(y**2 + x**2 < 0.8, 40.0, -1000.0) + 100.0 * label + rng.normal(0, 20, shape)
    sz, sy, sx = spacing
    affine = np.array([[0, 0, -sx, 5], [0, -sy, 0, 6], [-sz, 0, 0, 7], [0, 0, 0, 1.0]])
    write_raw_case(case_dir, image.astype(dtype), label, affine)


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    for case, (shape, spacing, dtype) in _RAW.items():
        _write_case(tmp_path / "raw" / case, shape, spacing, dtype)
    return tmp_path / "raw"  # no case_00400: it is read from case_00185


def test_the_references_layout_reads_back_as_preprocess_case_made_it(
    raw: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pre"
    report = preprocess_dataset(raw, out, cases=CASES, progress=False)
    assert (report.cases, report.processed, report.skipped, report.inference_set) == (
        4,
        4,
        0,
        False,
    )
    with open(out / INDEX_NAME, "rb") as file:
        index = pickle.load(file)
    assert index["file_list"] == CASES and list(index["cases"]) == CASES
    store = load_preprocessed(out)
    assert store.cases == CASES
    shapes = set()
    for number, case in enumerate(CASES):
        raw_case = read_case(raw / ("case_00185" if case == "case_00400" else case))
        image, label = preprocess_case(raw_case.image, raw_case.label, raw_case.spacing)
        loaded_image, loaded_label = store.load_case(number)
        assert (
            loaded_image.tobytes() == image.tobytes() and loaded_label.tobytes() == label.tobytes()
        )
        aux = index["cases"][case]
        assert list(aux) == [
            "original_affine",
            "reshaped_affine",
            "zoom_factor",
            "case",
            "image_shape",
        ]
        assert aux["case"] == case and aux["image_shape"] == image.shape == store.shape(number)
        np.testing.assert_array_equal(aux["original_affine"], raw_case.affine)
        np.testing.assert_array_equal(aux["reshaped_affine"], reshaped_affine(raw_case.affine))
        np.testing.assert_array_equal(
            aux["zoom_factor"], np.array(raw_case.spacing) / [1.6, 1.2, 1.2]
        )
        # What accuracy_kits.py reads: the label as NIfTI, with the resampled affine.
        segmentation = nibabel.load(out / "nifti" / case / "segmentation.nii.gz")
        assert isinstance(segmentation, nibabel.Nifti1Image)
        np.testing.assert_array_equal(segmentation.get_fdata().astype(np.uint8), label[0])
        np.testing.assert_array_equal(  # NIfTI keeps it in float32
            segmentation.affine, aux["reshaped_affine"].astype(np.float32)
        )
        np.testing.assert_array_equal(store.load_label(number), label[0])
        shapes.add(image.shape)
    assert shapes == {(1, 128, 128, 128), (1, 192, 128, 128)}
    np.testing.assert_array_equal(store.load_image(3), store.load_image(2))  # case_00400 = 185
    store.verify()


def test_done_cases_are_not_redone(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "pre"
    preprocess_dataset(raw, out, cases=CASES, progress=False)
    written = {path: path.stat().st_mtime_ns for path in out.rglob("*") if path.is_file()}
    again = preprocess_dataset(raw, out, cases=CASES, progress=False)
    assert (again.processed, again.skipped) == (0, 4)
    assert {path: path.stat().st_mtime_ns for path in written} == written
    source = raw / "case_00001" / IMAGING_NAME
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    touched = preprocess_dataset(raw, out, cases=CASES, progress=False)
    assert (touched.processed, touched.skipped) == (1, 3)
    assert (out / "case_00002.pkl").stat().st_mtime_ns == written[out / "case_00002.pkl"]


def test_a_bad_case_stops_the_run_and_the_rest_resumes(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "pre"
    image = raw / "case_00002" / IMAGING_NAME
    good = image.read_bytes()
    image.write_bytes(good[: len(good) // 3])  # a truncated download
    message = raised_line(preprocess_dataset, raw, out, cases=CASES, progress=False)
    assert message.startswith("cannot preprocess KiTS19 case_00002:") and str(image) in message
    assert (out / "case_00001.pkl").is_file() and not (out / INDEX_NAME).exists()
    assert "did not finish" in raised_line(load_preprocessed, out)
    image.write_bytes(good)
    resumed = preprocess_dataset(raw, out, cases=CASES, progress=False)
    assert (resumed.processed, resumed.skipped) == (3, 1)
    assert len(load_preprocessed(out)) == 4


def test_a_damaged_store_is_one_line(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "pre"
    preprocess_dataset(raw, out, cases=CASES[:2], progress=False)
    pickle_path = out / "case_00002.pkl"
    data = bytearray(pickle_path.read_bytes())
    data[-10] ^= 0xFF  # same size, other content
    pickle_path.write_bytes(bytes(data))
    store = load_preprocessed(out)
    assert "case_00002.pkl: it differs from what was written" in raised_line(store.load_case, 1)
    assert "out of range" in raised_line(store.load_case, 2)
    pickle_path.write_bytes(bytes(data[:100]))
    assert "case_00002.pkl: it has 100 bytes" in raised_line(load_preprocessed, out)
    (out / MANIFEST_NAME).unlink()
    assert "no readable manifest.json" in raised_line(load_preprocessed, out)
    # ...and preprocessing makes it whole again.
    assert preprocess_dataset(raw, out, cases=CASES[:2], progress=False).processed == 2
    load_preprocessed(out).verify()
