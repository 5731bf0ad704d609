"""The preprocessed KiTS19 set on disk, in the reference's layout, and its reader.

    <dir>/case_00000.pkl                   pickle of [image float32 [1,D,H,W], label uint8 [1,D,H,W]]
    <dir>/nifti/case_00000/imaging.nii.gz  the same volumes as NIfTI, with the resampled affine
    <dir>/nifti/case_00000/segmentation.nii.gz   (MLCommons' accuracy_kits.py reads these)
    <dir>/preprocessed_files.pkl           {"file_list": [cases in sample order],
                                            "cases": {case: {"original_affine", "reshaped_affine",
                                                             "zoom_factor", "case", "image_shape"}}}
    <dir>/manifest.json                    ours: settings, each case's source and outputs (bytes,
                                           sha256), its affines and shape; "complete" when whole

Everything but manifest.json is what the reference's preprocess.py writes, so that its
accuracy_kits.py and kits_QSL.py read our directory unchanged (sample index = position in
file_list). Every file is written to a temporary name and renamed; the manifest is written last.

The reader checks the manifest (complete, this preprocessing) and each file's size on opening, and
a case's sha256 when it loads the case (the bytes are read anyway): a truncated or damaged set is
one clear line, never a wrong volume.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.datasets.kits19.nifti import load_nifti, read_volume
from mlperf_harness.errors import HarnessError

MANIFEST_NAME = "manifest.json"
INDEX_NAME = "preprocessed_files.pkl"  # the reference's name: its scripts look for it
NIFTI_DIR = "nifti"
MANIFEST_VERSION = 1
# Bump when transform.py changes what it produces: every case is then redone. NumPy's and SciPy's
# versions are part of the freshness key too (zoom's arithmetic, the pickles' array format).
PREPROCESSING_VERSION = "mlperf-3d-unet-kits19-reference/1"
# Pickle protocol 4, as the reference's Python 3.8 wrote by default: big volumes, any Python 3.4+.
PICKLE_PROTOCOL = 4


def case_pickle_name(case: str) -> str:
    return f"{case}.pkl"


def nifti_names(case: str) -> tuple[str, str]:
    """The image's and the label's NIfTI file, relative to the preprocessed directory."""
    return (f"{NIFTI_DIR}/{case}/imaging.nii.gz", f"{NIFTI_DIR}/{case}/segmentation.nii.gz")


@dataclass(frozen=True)
class PreprocessedCase:
    """What the manifest records of one case."""

    case: str
    shape: tuple[int, int, int, int]  # [1, D, H, W], image and label alike
    original_affine: npt.NDArray[np.float64]
    reshaped_affine: npt.NDArray[np.float64]
    zoom_factor: npt.NDArray[np.float64]
    outputs: dict[str, dict[str, Any]]  # relative path -> {"bytes", "sha256"}

    def reference_aux(self) -> dict[str, Any]:
        """The case's entry in preprocessed_files.pkl, keys in the reference's order."""
        return {
            "original_affine": self.original_affine,
            "reshaped_affine": self.reshaped_affine,
            "zoom_factor": self.zoom_factor,
            "case": self.case,
            "image_shape": self.shape,
        }

    def to_json(self) -> dict[str, Any]:
        # JSON keeps float64 values exactly (repr round-trips), so the index can be rebuilt.
        return {
            "shape": list(self.shape),
            "original_affine": self.original_affine.tolist(),
            "reshaped_affine": self.reshaped_affine.tolist(),
            "zoom_factor": self.zoom_factor.tolist(),
            "outputs": self.outputs,
        }

    @classmethod
    def from_json(cls, case: str, record: Any) -> PreprocessedCase:
        """Raises KeyError, TypeError or ValueError for a record this module did not write."""
        shape = tuple(int(n) for n in record["shape"])
        if len(shape) != 4 or not isinstance(record["outputs"], dict):
            raise ValueError("not a case record")
        return cls(
            case=case,
            shape=(shape[0], shape[1], shape[2], shape[3]),
            original_affine=np.array(record["original_affine"], dtype=np.float64).reshape(4, 4),
            reshaped_affine=np.array(record["reshaped_affine"], dtype=np.float64).reshape(4, 4),
            zoom_factor=np.array(record["zoom_factor"], dtype=np.float64).reshape(3),
            outputs={str(k): dict(v) for k, v in record["outputs"].items()},
        )


def output_record(data: bytes) -> dict[str, Any]:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def reference_index_bytes(file_list: list[str], cases: list[PreprocessedCase]) -> bytes:
    """preprocessed_files.pkl as the reference's save_preprocessed_info writes it."""
    index = {"file_list": list(file_list), "cases": {c.case: c.reference_aux() for c in cases}}
    return pickle.dumps(index, protocol=PICKLE_PROTOCOL)


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The manifest, or None where there is none or it is not one of ours."""
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("manifest_version") != MANIFEST_VERSION:
        return None
    return manifest


class KitsPreprocessed:
    """A complete preprocessed set, read case by case (sample index = position in `cases`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        hint = f"preprocess it again (preprocess_data) into {directory}"
        if not directory.is_dir():
            raise HarnessError(f"no preprocessed KiTS19 data: {directory} is not a directory")
        manifest = read_manifest(directory)
        if manifest is None:
            raise HarnessError(f"no readable {MANIFEST_NAME} in {directory}; {hint}")
        if manifest.get("preprocessing") != PREPROCESSING_VERSION:
            raise HarnessError(
                f"{directory} was made by preprocessing {manifest.get('preprocessing')!r}, not "
                f"{PREPROCESSING_VERSION!r}; {hint}"
            )
        if not manifest.get("complete"):
            raise HarnessError(f"preprocessing of {directory} did not finish; {hint}")
        try:
            self.cases: list[str] = [str(case) for case in manifest["file_list"]]
            self.records = [
                PreprocessedCase.from_json(case, manifest["cases"][case]) for case in self.cases
            ]
            self._index_record = dict(manifest["files"][INDEX_NAME])
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(
                f"{directory / MANIFEST_NAME} is damaged ({error!r}); {hint}"
            ) from None
        self._hint = hint
        for relative, record in [
            (INDEX_NAME, self._index_record),
            *((name, out) for case in self.records for name, out in case.outputs.items()),
        ]:
            self._check_size(relative, record)

    def __len__(self) -> int:
        return len(self.cases)

    def shape(self, index: int) -> tuple[int, int, int, int]:
        """The sample's [1, D, H, W]: its image's, its label's and its response's."""
        return self._case(index).shape

    def load_case(self, index: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8]]:
        """The sample's image (float32) and label (uint8), both [1, D, H, W]."""
        record = self._case(index)
        name = case_pickle_name(record.case)
        data = self._read_checked(name, record.outputs[name])
        try:
            loaded = pickle.loads(data)
            image, label = loaded
        except (pickle.UnpicklingError, ValueError, TypeError, EOFError) as error:
            raise self._damaged(name, f"not a pickled [image, label] ({error})") from None
        if not (
            isinstance(image, np.ndarray)
            and isinstance(label, np.ndarray)
            and image.dtype == np.float32
            and label.dtype == np.uint8
            and image.shape == label.shape == record.shape
        ):
            raise self._damaged(name, f"not float32 and uint8 arrays of shape {list(record.shape)}")
        return image, label

    def load_image(self, index: int) -> npt.NDArray[np.float32]:
        return self.load_case(index)[0]

    def load_label(self, index: int) -> npt.NDArray[np.uint8]:
        """The sample's ground truth [D, H, W] as accuracy_kits.py reads it: from its NIfTI file
        (get_fdata, then uint8)."""
        record = self._case(index)
        name = nifti_names(record.case)[1]
        self._read_checked(name, record.outputs[name])
        path = self.directory / name
        label = read_volume(load_nifti(path), path).astype(np.uint8)
        if (1, *label.shape) != record.shape:
            raise self._damaged(
                name, f"its shape {list(label.shape)} is not {list(record.shape[1:])}"
            )
        return label

    def index_bytes_checked(self) -> bytes:
        """preprocessed_files.pkl's bytes, checked against the manifest."""
        return self._read_checked(INDEX_NAME, self._index_record)

    def verify(self) -> None:
        """Every file's sha256 against the manifest (reads the whole set)."""
        self.index_bytes_checked()
        for record in self.records:
            for name, out in record.outputs.items():
                self._read_checked(name, out)

    def _case(self, index: int) -> PreprocessedCase:
        if not 0 <= index < len(self.records):
            raise HarnessError(
                f"sample index {index} is out of range: {self.directory} has {len(self)} cases"
            )
        return self.records[index]

    def _check_size(self, relative: str, record: dict[str, Any]) -> None:
        try:
            size = (self.directory / relative).stat().st_size
        except OSError:
            raise self._damaged(relative, "it is missing") from None
        if size != record.get("bytes"):
            raise self._damaged(relative, f"it has {size} bytes, not {record.get('bytes')}")

    def _read_checked(self, relative: str, record: dict[str, Any]) -> bytes:
        try:
            data = (self.directory / relative).read_bytes()
        except OSError as error:
            raise self._damaged(relative, f"cannot read it: {error.strerror or error}") from None
        if hashlib.sha256(data).hexdigest() != record.get("sha256"):
            raise self._damaged(relative, "it differs from what was written (sha256)")
        return data

    def _damaged(self, relative: str, what: str) -> HarnessError:
        return HarnessError(
            f"preprocessed KiTS19 data {self.directory} is damaged: {relative}: {what}; {self._hint}"
        )


def load_preprocessed(directory: Path) -> KitsPreprocessed:
    """The complete preprocessed set in directory (what preprocess_dataset made)."""
    return KitsPreprocessed(directory)
