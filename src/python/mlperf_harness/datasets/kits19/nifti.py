"""NIfTI volumes read and written for KiTS19: one line for a file that cannot be read, and files
written whole (gzip bytes made in memory, then write_bytes_atomic).

Written files are what nibabel.save makes of a `.nii.gz` name (the same header and data), gzip
with mtime 0 so that the same volume gives the same bytes, and the same sha256 in the manifest.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import nibabel
import numpy as np
import numpy.typing as npt
from nibabel.filebasedimages import ImageFileError

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.errors import HarnessError

# What a truncated, corrupt or foreign file raises somewhere between nibabel.load and get_fdata.
_READ_ERRORS = (ImageFileError, OSError, EOFError, zlib.error, ValueError, gzip.BadGzipFile)


def load_nifti(path: Path) -> nibabel.Nifti1Image:
    """The image's header and affine (its data is read later, by read_volume)."""
    if not path.is_file():
        raise HarnessError(f"{path} is missing")
    try:
        image = nibabel.load(path)
    except _READ_ERRORS as error:
        raise HarnessError(f"cannot read {path}: {_reason(error)}") from error
    if not isinstance(image, nibabel.Nifti1Image):
        raise HarnessError(f"{path} is a {type(image).__name__}, not a NIfTI-1 volume")
    return image


def read_volume(image: nibabel.Nifti1Image, path: Path) -> npt.NDArray[np.float64]:
    """The voxels as nibabel's get_fdata gives them (float64, scaling applied): what the reference
    converts from, so that the conversions after it are the reference's."""
    try:
        data = np.asarray(image.get_fdata(), dtype=np.float64)
    except _READ_ERRORS as error:
        raise HarnessError(f"cannot read the voxels of {path}: {_reason(error)}") from error
    return data


def nifti_gz_bytes(volume: npt.NDArray[np.generic], affine: npt.NDArray[np.float64]) -> bytes:
    """A `.nii.gz` file's bytes for this volume (its dtype kept) and affine."""
    image = nibabel.Nifti1Image(volume, affine=affine)  # type: ignore[no-untyped-call]
    raw: bytes = image.to_bytes()
    return gzip.compress(raw, compresslevel=1, mtime=0)


def write_nifti_gz(
    path: Path, volume: npt.NDArray[np.generic], affine: npt.NDArray[np.float64]
) -> bytes:
    """Write the volume whole or not at all; the bytes written (for their digest)."""
    data = nifti_gz_bytes(volume, affine)
    write_bytes_atomic(path, data)
    return data


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
