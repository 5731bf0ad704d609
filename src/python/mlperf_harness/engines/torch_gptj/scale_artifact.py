"""GPT-J's static FP8 activation scales as a calibration artifact, torch-free: which forms the
engine takes (`--fp8_activations`), the artifact's key and file, read back or made once.

"row" (the default) quantizes each product's activations per token on the fly; "static" gives each
projection input (per block: the stacked q/k/v/fc_in's, out_proj's, fc_out's) one scale fixed from
the largest |x| it saw while the FP8 model decoded the calibration samples (calibrate.py), so no
product reduces over its activations at run time (engines/fp8_linear.py).

The maxima are an artifact of their own, as the FP8 ResNet engine's (engines/torch_fp8/calibrate.py):
a small JSON file keyed by the model and the calibration samples, under the engine cache's
`calibration/gptj/`, written whole (a temporary file renamed into place) and made once by runs that
share it (the key's lock). The engine is made at each run's start and keeps no file, so this is the
only thing a static run reuses. Another model or other samples give another key: a run of them
calibrates again (it says so on stderr); a file at the key that is damaged, incomplete or records
another model or set is calibrated again with a notice, never used.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from mlperf_harness.engines.amax_artifact import read_amax, write_amax
from mlperf_harness.errors import HarnessError
from mlperf_harness.scratch_lock import build_once

ROW, STATIC = "row", "static"
FP8_ACTIVATIONS = (ROW, STATIC)
METHOD = "gptj-fp8-input-amax-v1"  # what the maxima are: each projection's input, FP8 weights
PROJECTIONS = ("qkv_in", "out", "fc_out")  # module.Block's FP8 layers, in its order


def check_fp8_activations(form: str, precision: str) -> str:
    """`form` if GPT-J's torch engine takes it with `precision`, else one line."""
    if form not in FP8_ACTIVATIONS:
        raise HarnessError(
            f"GPT-J's FP8 activations are {' or '.join(FP8_ACTIVATIONS)}, not {form!r}"
        )
    if form == STATIC and precision != "fp8":
        raise HarnessError(
            f"--fp8_activations static needs --precision fp8 (FP8 weights), not {precision}"
        )
    return form


def layer_names(layers: int) -> list[str]:
    """Each FP8 projection's name in the artifact: 'h.<block>.<projection>'."""
    return [f"h.{i}.{name}" for i in range(layers) for name in PROJECTIONS]


def scales_key(model_id: str, calibration_sha256: str) -> str:
    identity = f"{model_id}:{calibration_sha256}:{METHOD}"
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def artifact_path(engine_root: Path, model_id: str, calibration_sha256: str) -> Path:
    return engine_root / "calibration" / "gptj" / f"{scales_key(model_id, calibration_sha256)}.json"


def _fields(model_id: str, calibration_sha256: str) -> dict[str, str]:
    """What an artifact's maxima must have been measured on to be this model's and samples'."""
    return {"method": METHOD, "model": model_id, "calibration_sha256": calibration_sha256}


def cached_amax(
    path: Path,
    names: Sequence[str],
    model_id: str,
    calibration_sha256: str,
    description: str,
    calibrate: Callable[[], dict[str, float]],
) -> dict[str, float]:
    """The maxima at `path`, or `calibrate()`'s, written there whole; one run at a time makes
    them (runs sharing the engine cache wait and read them)."""

    fields = _fields(model_id, calibration_sha256)

    def find() -> dict[str, float] | None:
        return read_amax(path, names, fields, "gptj: FP8 activation maxima")

    def make() -> dict[str, float]:
        print(
            f"gptj: calibrating FP8 activation scales on {description} -> {path}", file=sys.stderr
        )
        amax = calibrate()
        missing = [name for name in names if name not in amax]
        if missing:
            raise HarnessError(f"FP8 calibration recorded no maximum for {missing[0]}")
        kept = {name: amax[name] for name in names}
        write_amax(path, kept, {**fields, "calibration": description})
        return kept

    return build_once(path, "calibrating GPT-J's FP8 activation scales", find, make)
