"""One small ResNet-50 stand-in for every test that runs a real model: built once per machine and
code version, then reused by every test process (Pants runs each test file in a process of its own,
so a pytest fixture alone would build it once per file: half a minute of CPU each time).

The build is deterministic (bit-identical for the same code and seed), so it is cached under the
digest of everything that makes it: the code of the stand-in and of the image generation, and the
versions of the libraries it runs on. A lock lets concurrent test processes wait for one build; the
result is renamed into place whole. Tests treat the directory as read-only.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import onnx
import onnxruntime

import mlperf_harness
from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.resnet50 import stand_in_model
from mlperf_harness.benchmarks.resnet50.resources import STAND_IN_REPORT, StandInRecord
from mlperf_harness.records import read_record

# Enough calibration images for an int8 engine; held-out images for accuracy runs.
COUNTS = stand_in_model.ImageCounts(bn_statistics=16, train=60, calibration=20, validation=40)
SEED = 3
CACHE_ROOT = Path(tempfile.gettempdir()) / "mlperf-harness-test-cache"
# The packages whose code the build runs.
_BUILD_CODE = ("benchmarks/resnet50", "datasets/imagenet", "atomic.py", "write_errors.py")
_OLD_AFTER_S = 6 * 3600  # a build of other code, untouched this long, is no test's any more


@dataclasses.dataclass(frozen=True)
class SharedStandIn:
    directory: Path

    @property
    def model(self) -> Path:
        return self.directory / stand_in_model.MODEL_FILE_NAME

    @property
    def images(self) -> Path:
        """The held-out split: JPEGs and val_map.txt."""
        return self.directory / "images" / "validation"

    @property
    def calibration(self) -> Path:
        return self.directory / "images" / "calibration"

    @property
    def sha256(self) -> str:
        record = read_record(StandInRecord, self.directory / STAND_IN_REPORT)
        assert record is not None, f"no {STAND_IN_REPORT} in {self.directory}"
        return record.sha256

    def run_flags(self) -> list[str]:
        return ["--model_path", str(self.model), "--data_dir", str(self.images)]


def _key() -> str:
    digest = hashlib.sha256(repr((COUNTS, SEED)).encode())
    for library in (np, onnx, onnxruntime, cv2):
        digest.update(f"{library.__name__}={library.__version__}\n".encode())
    package = Path(mlperf_harness.__file__).parent
    for part in _BUILD_CODE:
        root = package / part
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            if path.is_file():
                digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def shared_stand_in() -> SharedStandIn:
    """The cached stand-in, built here first if this machine has none for this code."""
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    key = _key()
    final = CACHE_ROOT / key
    with open(CACHE_ROOT / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be building it: wait
        if not (final / STAND_IN_REPORT).is_file():
            work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=CACHE_ROOT))
            try:
                _build(work)
                shutil.rmtree(final, ignore_errors=True)  # a copy without its record is partial
                os.rename(work, final)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            _remove_old_builds(keep=key)
    return SharedStandIn(final)


def _remove_old_builds(keep: str) -> None:
    """Builds of older code (about 100 MB each), once nothing can still be using them."""
    cutoff = time.time() - _OLD_AFTER_S
    for path in CACHE_ROOT.iterdir():
        if path.name.startswith(keep) or path.stat().st_mtime > cutoff:
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _build(work: Path) -> None:
    model = work / stand_in_model.MODEL_FILE_NAME
    report = stand_in_model.build_stand_in_model(model, work, SEED, COUNTS, progress=False)
    # The record a real build leaves beside its model, from this build's own measurement; written
    # last, it marks the directory complete.
    record = StandInRecord(
        report.sha256, report.seed, 100.0 * report.heldout_top1, report.heldout_count, 0.0
    )
    write_json_atomic(work / STAND_IN_REPORT, dataclasses.asdict(record))
