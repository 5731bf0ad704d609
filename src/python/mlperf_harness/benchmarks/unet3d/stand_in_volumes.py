"""The embedded default's data for 3D-UNet: generated CT-like cases in KiTS19's raw layout.

With no KiTS19 at hand (it cannot be fetched here), the stand-in segments generated volumes written
as KiTS19 writes its cases: `<data_dir>/case_XXXXX/imaging.nii.gz` (Hounsfield units, int16) and
`segmentation.nii.gz` (uint8: 0 background, 1 kidney, 2 tumour), with an affine in KiTS19's
orientation (array axis 0 the slices along the body's length, the affine's rows permuted and
negative, as in the real files), so that the reference preprocessing's reading of spacings and
affines runs as it does on real cases.

Each case is drawn from one seed and is the same on every machine:

- Voxel spacings differ per case (slices 2.0-5.0 mm, in-plane 0.6-0.95 mm), so resampling to
  (1.6, 1.2, 1.2) mm always runs; each case's extent is chosen in millimetres so that after
  resampling an axis holds 112-200 voxels, which the preprocessing's padding and cropping turn into
  128 or 192: cases of one to eight 128³ windows.
- Air (-1000 HU) around an elliptic body: a fat rim (-100 HU), soft tissue (about 40 HU, with a slow
  wave of ±15 HU) and an organ-like ellipsoid (about 60 HU).
- One or two kidneys (contrast-enhanced, 150-200 HU) at the back of the body, each ellipsoid long
  along the body; each case has at least one tumour, a sphere sitting on a
  kidney's rim, partly outside it. The labels are where these shapes are, tumour over kidney.
  The tumour is brighter than the kidney (240-290 HU), unlike most real renal tumours: the
  stand-in's one fitted layer tells the classes apart by intensity, and a hypodense tumour between
  soft tissue and kidney gave it tumour DICE 0 (measured, seed 0).
- Gaussian noise (12-25 HU) on everything inside the body.

The ranges straddle the preprocessing's clip [-79, 304] HU: air and fat are clipped, the organs are
not, so clipping and the (x - 101) / 76.9 normalisation both change what the model sees.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import staging_directory
from mlperf_harness.datasets.kits19.layout import IMAGING_NAME, SEGMENTATION_NAME, write_raw_case
from mlperf_harness.datasets.kits19.transform import TARGET_SPACING  # sizes are chosen against it
from mlperf_harness.errors import HarnessError

Float64Array = npt.NDArray[np.float64]

BACKGROUND, KIDNEY, TUMOUR = 0, 1, 2

# Ranges each case draws from (uniform).
SLICE_SPACING_MM = (2.0, 5.0)
INPLANE_SPACING_MM = (0.6, 0.95)
RESAMPLED_VOXELS = (112, 200)  # per axis after resampling: 128 or 192 after padding/cropping
AIR_HU = -1000.0
FAT_HU = -100.0
TISSUE_HU = 40.0
ORGAN_HU = (50.0, 70.0)
KIDNEY_HU = (150.0, 200.0)
TUMOUR_HU = (240.0, 290.0)
NOISE_HU = (12.0, 25.0)
TISSUE_WAVE_HU = 15.0
FAT_RIM_MM = (6.0, 14.0)
KIDNEY_SEMI_AXES_MM = ((45.0, 65.0), (22.0, 30.0), (25.0, 35.0))  # along the body, front-back, side
TUMOUR_RADIUS_MM = (20.0, 32.0)
SECOND_KIDNEY_PROBABILITY = 0.6


@dataclass(frozen=True)
class CaseSpec:
    """One generated case: its name, spacing (mm per array axis) and array shape."""

    name: str
    spacing: tuple[float, float, float]
    shape: tuple[int, int, int]


def case_name(index: int) -> str:
    """KiTS19's case directory name: case_00000, case_00001, ..."""
    return f"case_{index:05d}"


def _rng(seed: int, index: int) -> np.random.Generator:
    if seed < 0 or index < 0:
        raise HarnessError(f"seed and case index must be non-negative, got {seed}, {index}")
    return np.random.default_rng(np.random.SeedSequence([seed, index]))


def kits_affine(spacing: Sequence[float]) -> Float64Array:
    """An affine in KiTS19's orientation: array axis 0 (slices) on world row 2, axis 2 on row 0,
    every scale negative; nibabel reads the spacing back as pixdim[1:4] in array-axis order."""
    affine = np.zeros((4, 4))
    affine[2, 0] = -spacing[0]
    affine[1, 1] = -spacing[1]
    affine[0, 2] = -spacing[2]
    affine[3, 3] = 1.0
    return affine


def _ellipsoid(
    grid: Sequence[Float64Array], centre: Sequence[float], semi_axes: Sequence[float]
) -> npt.NDArray[np.bool_]:
    inside: Float64Array = sum(
        ((axis - c) / s) ** 2 for axis, c, s in zip(grid, centre, semi_axes, strict=True)
    )  # type: ignore[assignment]
    mask: npt.NDArray[np.bool_] = inside <= 1.0
    return mask


def generate_case(
    seed: int, index: int
) -> tuple[CaseSpec, npt.NDArray[np.int16], npt.NDArray[np.uint8]]:
    """Case `index` of `seed`: its spec, HU image (int16) and labels (uint8), both [D, H, W]."""
    rng = _rng(seed, index)
    spacing = (
        float(rng.uniform(*SLICE_SPACING_MM)),
        float(rng.uniform(*INPLANE_SPACING_MM)),
        float(rng.uniform(*INPLANE_SPACING_MM)),
    )
    extent_mm = [
        float(rng.integers(RESAMPLED_VOXELS[0], RESAMPLED_VOXELS[1] + 1)) * target
        for target in TARGET_SPACING
    ]
    shape = (
        round(extent_mm[0] / spacing[0]),
        round(extent_mm[1] / spacing[1]),
        round(extent_mm[2] / spacing[2]),
    )
    # Millimetre coordinates of voxel centres, the volume's middle at 0.
    axes = [
        (np.arange(n, dtype=np.float64) - (n - 1) / 2.0) * s
        for n, s in zip(shape, spacing, strict=True)
    ]
    z, y, x = np.meshgrid(*axes, indexing="ij", sparse=True)
    grid = (z, y, x)
    half = [e / 2.0 for e in extent_mm]

    # The body: an elliptic cylinder along axis 0 filling most of the cross-section.
    body_axes = (np.inf, half[1] * rng.uniform(0.70, 0.85), half[2] * rng.uniform(0.80, 0.92))
    body_centre = (0.0, half[1] * rng.uniform(-0.05, 0.05), 0.0)
    rim = float(rng.uniform(*FAT_RIM_MM))
    body = _ellipsoid(grid, body_centre, body_axes)
    inner = _ellipsoid(grid, body_centre, (np.inf, body_axes[1] - rim, body_axes[2] - rim))
    wave_period = rng.uniform(40.0, 90.0, size=3)
    wave = (
        TISSUE_WAVE_HU
        * (
            np.sin(2 * np.pi * z / wave_period[0]) * np.cos(2 * np.pi * y / wave_period[1])
            + np.sin(2 * np.pi * x / wave_period[2])
        )
        / 2.0
    )
    image = np.full(shape, AIR_HU, dtype=np.float64)
    image[body] = FAT_HU
    image = np.where(inner, TISSUE_HU + wave, image)
    organ = inner & _ellipsoid(
        grid,
        (
            rng.uniform(-0.3, 0.3) * half[0],
            -0.25 * body_axes[1],
            rng.uniform(-0.4, 0.4) * body_axes[2],
        ),
        (half[0] * rng.uniform(0.5, 0.9), body_axes[1] * 0.35, body_axes[2] * 0.35),
    )
    image[organ] = rng.uniform(*ORGAN_HU)

    labels = np.zeros(shape, dtype=np.uint8)
    kidney_hu = float(rng.uniform(*KIDNEY_HU))
    sides = (
        [-1.0, 1.0]
        if rng.random() < SECOND_KIDNEY_PROBABILITY
        else [float(rng.choice([-1.0, 1.0]))]
    )
    tumour_side = int(rng.integers(len(sides)))
    for number, side in enumerate(sides):
        semi = [float(rng.uniform(*bounds)) for bounds in KIDNEY_SEMI_AXES_MM]
        semi[0] = min(semi[0], 0.8 * half[0])
        centre = (
            float(rng.uniform(-0.2, 0.2) * half[0]),
            float(body_centre[1] + body_axes[1] * rng.uniform(0.30, 0.45)),  # at the back
            float(side * body_axes[2] * rng.uniform(0.35, 0.5)),
        )
        kidney = _ellipsoid(grid, centre, semi) & inner
        image[kidney] = kidney_hu
        labels[kidney] = KIDNEY
        if number == tumour_side or rng.random() < 0.3:
            radius = float(rng.uniform(*TUMOUR_RADIUS_MM))
            direction = rng.standard_normal(3)
            direction /= np.linalg.norm(direction)
            # On the rim: the centre a little inside the kidney's surface along `direction`.
            depth = rng.uniform(0.6, 0.9)
            tumour_centre = [
                c + depth * s * d for c, s, d in zip(centre, semi, direction, strict=True)
            ]
            tumour = _ellipsoid(grid, tumour_centre, (radius,) * 3) & inner
            image[tumour] = rng.uniform(*TUMOUR_HU)
            labels[tumour] = TUMOUR

    noise = rng.normal(0.0, rng.uniform(*NOISE_HU), size=shape)
    image = np.where(body, image + noise, image)
    spec = CaseSpec(case_name(index), spacing, shape)
    return spec, np.round(image).astype(np.int16), labels


def write_cases(data_dir: Path, seed: int, indices: Sequence[int]) -> list[CaseSpec]:
    """Cases `indices` of `seed` under `data_dir` in KiTS19's raw layout. A case appears whole or
    not at all: its directory is written under a staging name and renamed; a case already there
    is kept (it is the same case: generation is deterministic)."""
    specs = []
    data_dir.mkdir(parents=True, exist_ok=True)
    for index in indices:
        spec, image, labels = generate_case(seed, index)
        final = data_dir / spec.name
        if not all((final / name).is_file() for name in (IMAGING_NAME, SEGMENTATION_NAME)):
            shutil.rmtree(final, ignore_errors=True)  # a half case someone else left: regenerate
            staging = staging_directory(data_dir, f".{spec.name}.")
            write_raw_case(staging, image, labels, kits_affine(spec.spacing))
            staging.rename(final)
        specs.append(spec)
    return specs
