"""The raw KiTS19 layout, its inference cases, and one raw case read as the reference reads it.

    <data_dir>/case_00000/imaging.nii.gz        CT volume (HU)
    <data_dir>/case_00000/segmentation.nii.gz   labels: 0 background, 1 kidney, 2 tumour
    ...

The layout of github.com/neheller/kits19's data/ directory. MLPerf's inference set is the 42 cases
of the reference's meta/inference_cases.json plus case_00400, which the reference's Makefile makes
as a copy of case_00185 (target duplicate_kits19_case_00185: `cp -Rf case_00185 case_00400` in the
data directory): 43 samples, case_00400's volume identical to case_00185's. Where case_00400 is
absent, its files are read from case_00185 instead, which gives the same output without writing
into the data directory (possibly read-only, or another user's).

The data cannot be downloaded by this harness (it comes from the KiTS19 challenge's own
repository), so every failure says what is missing and how to get it, on one line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.datasets.kits19.nifti import load_nifti, read_volume, write_nifti_gz
from mlperf_harness.datasets.kits19.transform import check_volumes
from mlperf_harness.errors import HarnessError

IMAGING_NAME = "imaging.nii.gz"
SEGMENTATION_NAME = "segmentation.nii.gz"
DUPLICATE_CASE = "case_00400"
DUPLICATE_SOURCE = "case_00185"
LABEL_CLASSES = 3  # background, kidney, tumour

# MLCommons' vision/medical_imaging/3d-unet-kits19/meta/inference_cases.json, in its order.
INFERENCE_CASES: tuple[str, ...] = tuple(
    f"case_{number:05d}"
    for number in (
        0, 3, 5, 6, 12, 24, 34, 41, 44, 49, 52, 56, 61, 65, 66, 70, 76, 78, 80, 84, 86, 87, 92,
        111, 112, 125, 128, 138, 157, 160, 161, 162, 169, 171, 176, 185, 187, 189, 198, 203, 206,
        207, 400,
    )
)  # fmt: skip

HOW_TO_GET = (
    "KiTS19 cannot be downloaded by this harness: clone https://github.com/neheller/kits19, run "
    "`pip3 install -r requirements.txt && python3 -m starter_code.get_imaging` in it, and give its "
    "data/ directory (MLCommons' vision/medical_imaging/3d-unet-kits19/Makefile, target "
    "download_kits19_raw_data); case_00400 may be left out: it is case_00185 again"
)

_CASE_NAME = re.compile(r"case_\d{5}")
_SHOW_MISSING = 3  # missing cases an error line names


@dataclass(frozen=True)
class KitsLayout:
    """A checked data directory: for each case, in order, the directory its files are read from."""

    data_dir: Path
    sources: dict[str, Path]

    @property
    def cases(self) -> list[str]:
        return list(self.sources)

    @property
    def is_inference_set(self) -> bool:
        """The 43 cases of MLPerf's accuracy run, in the reference's order."""
        return tuple(self.sources) == INFERENCE_CASES


@dataclass(frozen=True)
class RawCase:
    """One case as the reference loads it: image float32 and label uint8 ([D, H, W]), the voxel
    spacing of the image's header (pixdim[1:4], Python floats of float32 values) and its affine."""

    image: npt.NDArray[np.float32]
    label: npt.NDArray[np.uint8]
    spacing: tuple[float, float, float]
    affine: npt.NDArray[np.float64]


def check_layout(data_dir: Path, cases: Sequence[str] = INFERENCE_CASES) -> KitsLayout:
    """The cases' directories in data_dir, or one line naming what is missing and how to get it.

    Only presence is checked here (both files, not empty: the reference's Makefile test); a file
    that cannot be read is reported by read_case when preprocessing reaches it.
    """
    if not cases:
        raise HarnessError("no KiTS19 cases asked for")
    bad_names = [case for case in cases if not _CASE_NAME.fullmatch(case)]
    if bad_names or len(set(cases)) != len(cases):
        raise HarnessError(
            f"KiTS19 case names are case_ and 5 digits, each once; not {list(cases)[:5]}..."
            if bad_names
            else f"a KiTS19 case is listed twice in {list(cases)}"
        )
    if not data_dir.is_dir():
        raise HarnessError(f"no KiTS19 data: {data_dir} is not a directory; {HOW_TO_GET}")
    sources: dict[str, Path] = {}
    missing: list[str] = []
    for case in cases:
        source = data_dir / case
        if case == DUPLICATE_CASE and not source.exists():
            source = data_dir / DUPLICATE_SOURCE  # what the Makefile's copy would hold
        problem = _case_problem(source)
        if problem is None:
            sources[case] = source
        else:
            missing.append(f"{case} ({problem})")
    if missing:
        shown = ", ".join(missing[:_SHOW_MISSING])
        more = f" and {len(missing) - _SHOW_MISSING} more" if len(missing) > _SHOW_MISSING else ""
        raise HarnessError(
            f"KiTS19 data in {data_dir} lacks {len(missing)} of its {len(cases)} cases: "
            f"{shown}{more}; {HOW_TO_GET}"
        )
    return KitsLayout(data_dir, sources)


def read_case(case_dir: Path) -> RawCase:
    """A case's volumes as the reference reads them (nibabel's get_fdata, then float32 for the
    image and uint8 for the label); one line for a file that is missing, corrupt or inconsistent."""
    image_path, label_path = case_dir / IMAGING_NAME, case_dir / SEGMENTATION_NAME
    image_file = load_nifti(image_path)
    label_file = load_nifti(label_path)
    # The reference reads the spacing from the header's pixdim, not from the affine.
    pixdim = image_file.header["pixdim"][1:4].tolist()
    spacing = (float(pixdim[0]), float(pixdim[1]), float(pixdim[2]))
    image = read_volume(image_file, image_path).astype(np.float32)
    label_values = read_volume(label_file, label_path)
    try:
        check_volumes(image, label_values, spacing)
    except HarnessError as error:
        raise HarnessError(f"KiTS19 case {case_dir}: {error}") from None
    if label_values.size and not (label_values.min() >= 0 and label_values.max() < LABEL_CLASSES):
        raise HarnessError(
            f"{label_path} holds labels {label_values.min():g} to {label_values.max():g}, not "
            f"0 (background), 1 (kidney) and 2 (tumour)"
        )
    label = label_values.astype(np.uint8)
    return RawCase(image, label, spacing, np.array(image_file.affine, dtype=np.float64))


def write_raw_case(
    case_dir: Path,
    image: npt.NDArray[np.generic],
    label: npt.NDArray[np.generic],
    affine: npt.NDArray[np.float64],
) -> None:
    """Write a case in the raw layout (generated data: the stand-in's, tests'), each file whole.
    The voxel spacing is the affine's column norms, as nibabel puts them in the header's pixdim."""
    case_dir.mkdir(parents=True, exist_ok=True)
    write_nifti_gz(case_dir / IMAGING_NAME, image, affine)
    write_nifti_gz(case_dir / SEGMENTATION_NAME, label, affine)


def _case_problem(case_dir: Path) -> str | None:
    if not case_dir.is_dir():
        return "no directory"
    for name in (IMAGING_NAME, SEGMENTATION_NAME):
        path = case_dir / name
        if not path.is_file():
            return f"no {name}"
        if path.stat().st_size == 0:
            return f"{name} is empty"
    return None
