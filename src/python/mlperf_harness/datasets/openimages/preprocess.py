"""Preprocess the images of an OpenImages set (layout.py) into arrays, incrementally.

    <output_dir>/fp32/<file_name>.npy   float32 [3, 800, 800]: transform.preprocess_file's output
    <output_dir>/int8/<file_name>.npy   int8 [3, 800, 800]: the same at scale 1/127
    <output_dir>/manifest.json          the samples in annotation order, each with its source's
                                        size and mtime; the transform and OpenCV versions
    <output_dir>/manifest.journal       while a run works: one line per image it has finished

Each array is written to a temporary name and renamed, and each finished image is appended to the
journal at once, so an interrupted run loses only the images in flight and the next resumes. An
image is up to date when a manifest or journal of the same transform recorded its source's size and
mtime and every requested output exists at its exact size. One run at a time writes a directory
(scratch_lock); a directory already up to date is only read.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from mlperf_harness.atomic import remove_stale_temporaries, write_bytes_atomic, write_json_atomic
from mlperf_harness.datasets.openimages import transform
from mlperf_harness.datasets.openimages.layout import OpenImagesSet, check_layout
from mlperf_harness.errors import HarnessError
from mlperf_harness.progress import bar_disabled
from mlperf_harness.scratch_lock import exclusive
from mlperf_harness.write_errors import writing

FP32 = "fp32"
INT8 = "int8"
FORMATS: dict[str, dict[str, Any]] = {
    FP32: {"dtype": "float32", "description": "resize 800x800, / 255, RGB, CHW"},
    INT8: {"dtype": "int8", "scale": transform.INT8_SCALE, "description": "round(fp32 * 127)"},
}
MANIFEST_NAME = "manifest.json"
JOURNAL_NAME = "manifest.journal"
TRANSFORM_VERSION = "mlperf-retinanet-openimages-800/1"  # bump when transform.py's output changes
_SHAPE = (3, transform.OUTPUT_SIZE, transform.OUTPUT_SIZE)


@dataclass(frozen=True)
class PreprocessReport:
    output_dir: Path
    total: int
    processed: int
    skipped: int
    seconds: float


def _key() -> dict[str, str]:
    return {"version": TRANSFORM_VERSION, "opencv": cv2.__version__}


def _npy_size(fmt: str) -> int:
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(_SHAPE, dtype=FORMATS[fmt]["dtype"]))
    return buffer.tell()


def _outputs(name: str, formats: Sequence[str]) -> dict[str, str]:
    return {fmt: f"{fmt}/{name}.npy" for fmt in formats}


def _previous(output_dir: Path) -> dict[str, dict[str, Any]]:
    """Records by file name from the manifest and the journal, if made by this transform."""
    records: list[Any] = []
    try:
        manifest = json.loads((output_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        if manifest.get("transform") == _key():
            records += manifest.get("samples", [])
    except (OSError, ValueError, AttributeError):
        pass
    try:
        lines = (output_dir / JOURNAL_NAME).read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    if lines and lines[0] == json.dumps(_key()):
        for line in lines[1:]:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue  # a line cut off by a kill
    return {r["file"]: r for r in records if isinstance(r, dict) and isinstance(r.get("file"), str)}


def _up_to_date(
    record: dict[str, Any] | None, source: Path, output_dir: Path, formats: Sequence[str]
) -> bool:
    if record is None:
        return False
    try:
        stat = source.stat()
    except OSError:
        return False
    if [record.get("size"), record.get("mtime_ns")] != [stat.st_size, stat.st_mtime_ns]:
        return False
    for fmt, relative in _outputs(record["file"], formats).items():
        try:
            if (output_dir / relative).stat().st_size != _npy_size(fmt):
                return False
        except OSError:
            return False
    return True


def preprocess_dataset(
    data_dir: Path,
    output_dir: Path,
    formats: Sequence[str] = (FP32,),
    *,
    progress: bool = True,
    threads: int = 2,
) -> PreprocessReport:
    """Bring output_dir up to date with data_dir's images; see the module doc. A missing or
    undecodable image stops the run with one line naming it, the images done so far kept."""
    unknown = [fmt for fmt in formats if fmt not in FORMATS]
    if unknown or not formats:
        raise HarnessError(f"unknown preprocessing format {unknown}: choose from {list(FORMATS)}")
    started = time.monotonic()
    images = check_layout(data_dir)
    if _current(images, output_dir, formats):
        return PreprocessReport(output_dir, len(images), 0, len(images), time.monotonic() - started)
    with exclusive(output_dir, "preprocessing"):
        with writing(output_dir):
            for fmt in formats:
                (output_dir / fmt).mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries([output_dir, *(output_dir / fmt for fmt in formats)])
        previous = _previous(output_dir)
        records: dict[int, dict[str, Any]] = {}
        jobs = []
        for index, image in enumerate(images.images):
            name = str(image["file_name"])
            record = previous.get(name)
            if _up_to_date(record, images.image_dir / name, output_dir, formats):
                assert record is not None
                records[index] = {**record, "index": index}
            else:
                jobs.append(index)
        skipped = len(records)
        journal = output_dir / JOURNAL_NAME
        header = json.dumps(_key())
        with writing(journal):
            if not _first_line_is(journal, header):
                journal.write_text(header + "\n", encoding="utf-8")

        def one(index: int) -> dict[str, Any]:
            name = str(images.images[index]["file_name"])
            source = images.image_dir / name
            stat = source.stat() if source.is_file() else None
            fp32 = transform.preprocess_file(source)
            arrays: dict[str, npt.NDArray[Any]] = {FP32: fp32}
            if INT8 in formats:
                arrays[INT8] = transform.quantize_int8(fp32)
            outputs = _outputs(name, formats)
            for fmt in formats:
                buffer = io.BytesIO()
                np.save(buffer, arrays[fmt], allow_pickle=False)
                write_bytes_atomic(output_dir / outputs[fmt], buffer.getvalue())
            assert stat is not None  # preprocess_file raised otherwise
            return {
                "index": index,
                "file": name,
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
                "outputs": outputs,
            }

        with (
            tqdm(
                total=len(images),
                initial=skipped,
                unit="img",
                desc="preprocess",
                disable=bar_disabled(progress),
            ) as bar,
            ThreadPoolExecutor(max_workers=max(1, threads)) as pool,
        ):
            # OpenCV's decode and resize release the GIL; a bounded window of images in flight.
            window = max(1, threads) * 2
            for start in range(0, len(jobs), window):
                for record in pool.map(one, jobs[start : start + window]):
                    records[record["index"]] = record
                    with writing(journal), open(journal, "a", encoding="utf-8") as out:
                        out.write(json.dumps(record) + "\n")
                    bar.update(1)
        write_json_atomic(output_dir / MANIFEST_NAME, _manifest(images, formats, records))
        with writing(journal):
            journal.unlink(missing_ok=True)
    return PreprocessReport(output_dir, len(images), len(jobs), skipped, time.monotonic() - started)


def _first_line_is(path: Path, line: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().rstrip("\n") == line
    except OSError:
        return False


def _manifest(
    images: OpenImagesSet, formats: Sequence[str], records: dict[int, dict[str, Any]]
) -> dict[str, Any]:
    return {
        "transform": _key(),
        "source_dir": str(images.data_dir.resolve()),
        "full_subset": images.is_full,
        "total": len(images),
        "complete": len(records) == len(images),
        "formats": {fmt: {**FORMATS[fmt], "shape": list(_SHAPE)} for fmt in formats},
        "samples": [records[i] for i in sorted(records)],
    }


def _current(images: OpenImagesSet, output_dir: Path, formats: Sequence[str]) -> bool:
    """Whether output_dir's manifest already covers every image, in every format, up to date."""
    if (output_dir / JOURNAL_NAME).exists():
        return False
    try:
        manifest = json.loads((output_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if manifest.get("transform") != _key() or not manifest.get("complete"):
        return False
    if not set(formats) <= set(manifest.get("formats", {})):
        return False
    samples = manifest.get("samples", [])
    if len(samples) != len(images):
        return False
    return all(
        sample.get("file") == image["file_name"]
        and _up_to_date(sample, images.image_dir / str(image["file_name"]), output_dir, formats)
        for sample, image in zip(samples, images.images, strict=True)
    )


class PreprocessedImages:
    """Reads the arrays of a completed preprocess_dataset, in annotation order."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        try:
            manifest = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise HarnessError(
                f"no readable {MANIFEST_NAME} in {directory}; run preprocess_data"
            ) from err
        if not manifest.get("complete"):
            raise HarnessError(f"preprocessing of {directory} is not complete; run preprocess_data")
        self.samples: list[dict[str, Any]] = manifest["samples"]
        self.formats: dict[str, dict[str, Any]] = manifest["formats"]

    def __len__(self) -> int:
        return len(self.samples)

    def load(self, indices: Sequence[int], fmt: str = FP32) -> npt.NDArray[Any]:
        if fmt not in self.formats:
            raise HarnessError(f"{self.directory} holds {sorted(self.formats)}, not {fmt!r}")
        dtype = np.dtype(self.formats[fmt]["dtype"])
        out = np.empty((len(indices), *_SHAPE), dtype=dtype)
        for row, index in enumerate(indices):
            path = self.directory / self.samples[index]["outputs"][fmt]
            try:
                array = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as err:
                raise HarnessError(f"cannot read preprocessed sample {path}: {err}") from err
            if array.shape != _SHAPE or array.dtype != dtype:
                raise HarnessError(
                    f"{path} is {array.dtype}{list(array.shape)}: run preprocess_data again"
                )
            out[row] = array
        return out
