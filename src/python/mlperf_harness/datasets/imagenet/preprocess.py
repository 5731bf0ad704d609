"""Preprocess the images of a val_map.txt into arrays, incrementally, and the store that reads them.

Output layout (NVIDIA's, so their tools and ours read the same tree):

    <output_dir>/fp32/<file>.npy          float32 (3, 224, 224): transform.preprocess_file's output
    <output_dir>/int8_linear/<file>.npy   int8 (3, 224, 224): NVIDIA's "linear" INT8 input
    <output_dir>/manifest.json            samples in val_map order: label, source hash, outputs
    <output_dir>/manifest.journal         while a run works: one line per sample it has finished

One .npy per sample rather than one memory-mapped array of all 50,000: each sample is written to a
temporary name and renamed, so an interruption (Ctrl-C, a corrupt image, a killed job) never leaves
a half-written sample, resuming needs no bookkeeping beyond "does the file exist", and a changed
source rewrites one file. The cost, opening one file per sample, does not matter where it is paid:
LoadGen's query sample library loads a performance set of ~1,000 samples once, before timing starts.
A single array would need preallocation, a per-slot "done" map, and care with partial writes.

A sample is up to date when the previous manifest (same transform version) has the same source
sha256 and all requested outputs exist with the right size. A source whose size and mtime are as
recorded is trusted without re-hashing (as make and git do; `rehash=True` forces it); one whose
stat changed is re-hashed by a worker and recomputed only if its content changed.

A directory that is up to date is only read (it may be read-only, or another user's). Otherwise one
run at a time writes it: a second waits for the first (mlperf_harness.scratch_lock) and then finds
the work done. Each finished chunk of samples is appended to the journal at once, and the next run
counts the journal's samples as done: a killed run loses only the chunks it had in flight (rewriting
the whole manifest that often would not do: for 50,000 samples it takes seconds). Worker processes
end with the run, however it ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import json
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import cv2
import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from mlperf_harness import native
from mlperf_harness.atomic import remove_stale_temporaries, write_bytes_atomic, write_json_atomic
from mlperf_harness.datasets.imagenet import transform
from mlperf_harness.datasets.imagenet.layout import ValSet, check_layout
from mlperf_harness.errors import HarnessError
from mlperf_harness.progress import bar_disabled
from mlperf_harness.scratch_lock import exclusive
from mlperf_harness.write_errors import check_directory_path, writing

FP32 = "fp32"
INT8_LINEAR = "int8_linear"
DEFAULT_FORMATS = (FP32, INT8_LINEAR)
MANIFEST_NAME = "manifest.json"
JOURNAL_NAME = "manifest.journal"  # JSON lines: a header, then the records finished since
MANIFEST_VERSION = 1
# Bump when transform.py or a quantizer below changes its output: every sample is then redone.
# The OpenCV version is part of the freshness key too, as its JPEG decoder and resize may change.
TRANSFORM_VERSION = "mlperf-resnet50-v1.5-reference/1"

# NVIDIA's ResNet-50 preprocessing (code/resnet50/tensorrt/preprocess_data.py, quantizer()) makes
# int8_linear from the fp32 array as np.clip(x, -128, 127).astype(np.int8): scale 1.0, values
# truncated toward zero. The mean-subtracted pixels span [-123.68, 151.22], so only values above 127
# are clipped; the network's INT8 input tensor is calibrated with this fixed scale.
INT8_LINEAR_SCALE = 1.0

_SHAPE = (3, transform.OUTPUT_SIZE, transform.OUTPUT_SIZE)
_FORMATS: dict[str, dict[str, Any]] = {
    FP32: {"dtype": "float32", "shape": list(_SHAPE), "description": "transform.preprocess_file"},
    INT8_LINEAR: {
        "dtype": "int8",
        "shape": list(_SHAPE),
        "scale": INT8_LINEAR_SCALE,
        "description": "NVIDIA int8_linear: clip(fp32, -128, 127), truncated toward zero",
    },
}


class SourceInfo(TypedDict):
    size: int
    mtime_ns: int
    sha256: str


class SampleRecord(TypedDict):
    index: int
    file: str
    label: int
    source: SourceInfo
    outputs: dict[str, str]


@dataclass(frozen=True)
class PreprocessReport:
    output_dir: Path
    manifest_path: Path
    dataset: str  # ValSet.describe(): the full ImageNet set or a partial one, and how many images
    total: int
    processed: int  # computed in this run
    skipped: int  # already up to date
    seconds: float
    workers: int

    @property
    def images_per_second(self) -> float:
        return self.processed / self.seconds if self.seconds > 0 else 0.0


def quantize_int8_linear(chw: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    """NVIDIA's int8_linear input: clip to [-128, 127], then truncate toward zero (scale 1.0).

    In C++ with the GIL released (mlperf_harness.native), byte for byte what
    `np.clip(chw, -128, 127).astype(np.int8)` gives (NaN -> 0), C-ordered; float32 only.
    """
    return native.quantize_int8_linear(chw)


def dequantize_int8_linear(values: npt.NDArray[np.int8]) -> npt.NDArray[np.float32]:
    return values.astype(np.float32) * np.float32(INT8_LINEAR_SCALE)


def preprocess_data(
    data_dir: Path,
    output_dir: Path,
    formats: Sequence[str] = DEFAULT_FORMATS,
    *,
    workers: int | None = None,
    chunk_size: int = 16,
    progress: bool = True,
    rehash: bool = False,
) -> PreprocessReport:
    """Bring output_dir up to date with the images of data_dir's val_map.txt; see the module doc.

    workers: processes to use (default: every CPU this process may run on; 1 runs in-process).
    A missing or undecodable image raises HarnessError naming it, after saving the progress so far.
    """
    if chunk_size < 1 or (workers is not None and workers < 1):
        raise HarnessError(f"workers ({workers}) and chunk_size ({chunk_size}) must be at least 1")
    formats = tuple(dict.fromkeys(formats))
    unknown = [fmt for fmt in formats if fmt not in _FORMATS]
    if unknown or not formats:
        raise HarnessError(f"unknown preprocessing format {unknown}: choose from {list(_FORMATS)}")
    val_set = check_layout(data_dir)
    check_directory_path(output_dir, "the preprocessed directory")
    started = time.monotonic()
    workers_wanted = workers or _available_cpus()
    # Keep the formats an earlier run produced: a run that needs only fp32 must not drop (and so
    # force a later full run to redo) the int8 files beside it.
    formats = tuple(dict.fromkeys([*formats, *_previous_formats(output_dir)]))
    records, jobs = _plan(val_set, output_dir, formats, rehash)
    manifest = _ManifestWriter(output_dir, val_set, formats)
    if not jobs and manifest.is_current(records):  # nothing to write: no lock, no write
        return PreprocessReport(
            output_dir=output_dir,
            manifest_path=manifest.path,
            dataset=val_set.describe(),
            total=len(val_set),
            processed=0,
            skipped=len(records),
            seconds=time.monotonic() - started,
            workers=1,
        )
    with exclusive(output_dir, "preprocessing"):
        for fmt in formats:
            (output_dir / fmt).mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries([output_dir, *(output_dir / fmt for fmt in formats)])
        # Again, now that the directory is ours: the run we may have waited for did the work.
        formats = tuple(dict.fromkeys([*formats, *_previous_formats(output_dir)]))
        records, jobs = _plan(val_set, output_dir, formats, rehash)
        manifest = _ManifestWriter(output_dir, val_set, formats)
        skipped = len(records)
        chunk_count = -(-len(jobs) // chunk_size)
        workers = max(1, min(workers_wanted, chunk_count))
        processed = 0
        with tqdm(
            total=len(val_set),
            initial=skipped,
            unit="img",
            desc="preprocess",
            disable=bar_disabled(progress),
        ) as bar:

            def on_done(results: list[_Result]) -> None:
                nonlocal processed, skipped
                finished = [result.record for result in results if result.record is not None]
                for result in results:
                    if result.record is not None:
                        records[result.record["index"]] = result.record
                        processed += result.recomputed
                        skipped += not result.recomputed
                journal.append(finished)  # before an error below stops the run
                bar.update(len(finished))
                errors = [result.error for result in results if result.error is not None]
                if errors:
                    raise HarnessError(errors[0])

            journal = _Journal(output_dir / JOURNAL_NAME)
            try:
                _run_chunks(
                    _chunks(val_set, output_dir, formats, jobs, chunk_size), workers, on_done
                )
            except BaseException:
                # Save what was done. If that fails too (the disk that stopped the work may be
                # full), show what stopped the work: the journal keeps the progress.
                with contextlib.suppress(HarnessError):
                    manifest.write(records)
                    journal.remove()
                raise
            manifest.write(records)
            journal.remove()
    return PreprocessReport(
        output_dir=output_dir,
        manifest_path=manifest.path,
        dataset=val_set.describe(),
        total=len(val_set),
        processed=processed,
        skipped=skipped,
        seconds=time.monotonic() - started,
        workers=workers,
    )


def load_samples(
    preprocessed_dir: Path, indices: Sequence[int], fmt: str = FP32
) -> npt.NDArray[Any]:
    """Stack the samples at indices (val_map order) in format fmt: an (N, 3, 224, 224) array."""
    return PreprocessedSamples(preprocessed_dir).load(indices, fmt)


class PreprocessedSamples:
    """Reads preprocessed samples, validated against the manifest of a completed preprocess_data."""

    def __init__(self, preprocessed_dir: Path) -> None:
        self.directory = preprocessed_dir
        manifest = _read_manifest(preprocessed_dir / MANIFEST_NAME)
        hint = f"run preprocess_data for {preprocessed_dir}"
        if manifest is None:
            raise HarnessError(f"no readable {MANIFEST_NAME} in {preprocessed_dir}; {hint}")
        if not manifest.get("complete") or len(manifest["samples"]) != manifest["total"]:
            raise HarnessError(f"preprocessing of {preprocessed_dir} is not complete; {hint}")
        self.formats: dict[str, dict[str, Any]] = manifest["formats"]
        self.samples: list[SampleRecord] = manifest["samples"]

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def labels(self) -> list[int]:
        return [sample["label"] for sample in self.samples]

    def path(self, index: int, fmt: str) -> Path:
        return self.directory / self.samples[index]["outputs"][fmt]

    def load(self, indices: Sequence[int], fmt: str) -> npt.NDArray[Any]:
        if fmt not in self.formats:
            raise HarnessError(
                f"{self.directory} holds formats {sorted(self.formats)}, not {fmt!r}; "
                f"run preprocess_data with format {fmt}"
            )
        shape = tuple(self.formats[fmt]["shape"])
        dtype = np.dtype(self.formats[fmt]["dtype"])
        out = np.empty((len(indices), *shape), dtype=dtype)
        for row, index in enumerate(indices):
            if not 0 <= index < len(self.samples):
                raise HarnessError(
                    f"sample index {index} is out of range: {self.directory} has {len(self)}"
                )
            path = self.path(index, fmt)
            try:
                array = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as err:
                raise HarnessError(f"cannot read preprocessed sample {path}: {err}") from err
            if array.shape != shape or array.dtype != dtype:
                raise HarnessError(
                    f"preprocessed sample {path} is {array.dtype}{list(array.shape)}, the manifest "
                    f"says {dtype}{list(shape)}; run preprocess_data again"
                )
            out[row] = array
        return out


# --- planning: what is up to date -----------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    index: int
    name: str
    label: int
    known_sha256: str | None  # set: outputs exist, recompute only if the source hash differs


def _plan(
    val_set: ValSet, output_dir: Path, formats: tuple[str, ...], rehash: bool
) -> tuple[dict[int, SampleRecord], list[_Job]]:
    """Split the samples into those already up to date (their records) and jobs for the rest."""
    previous = _previous_records(output_dir)
    sizes = {fmt: _npy_size(fmt) for fmt in formats}
    records: dict[int, SampleRecord] = {}
    jobs: list[_Job] = []
    for index, (name, label) in enumerate(val_set.entries):
        old = previous.get(name)
        outputs = _output_names(name, formats)
        if old is None or not _outputs_present(output_dir, old, outputs, sizes):
            jobs.append(_Job(index, name, label, None))
            continue
        source = old["source"]
        try:
            stat = (val_set.image_dir / name).stat()
            changed = (stat.st_size, stat.st_mtime_ns) != (source["size"], source["mtime_ns"])
        except OSError:
            changed = True  # vanished since the layout check: the worker reports it by name
        if rehash or changed:
            jobs.append(_Job(index, name, label, source["sha256"]))
            continue
        records[index] = SampleRecord(
            index=index, file=name, label=label, source=source, outputs=outputs
        )
    return records, jobs


def _previous_formats(output_dir: Path) -> list[str]:
    manifest = _read_manifest(output_dir / MANIFEST_NAME)
    if manifest is None or manifest.get("transform") != _transform_key():
        return []
    previous = manifest.get("formats")
    return [fmt for fmt in previous if fmt in _FORMATS] if isinstance(previous, dict) else []


def _previous_records(output_dir: Path) -> dict[str, SampleRecord]:
    """Records of earlier runs by file name: the manifest's, then the journal's of a run that did
    not finish; none from another transform or OpenCV."""
    manifest = _read_manifest(output_dir / MANIFEST_NAME)
    samples: list[Any] = []
    if manifest is not None and manifest.get("transform") == _transform_key():
        listed = manifest.get("samples")
        samples = listed if isinstance(listed, list) else []
    samples += _journal_records(output_dir / JOURNAL_NAME)
    # A record this module did not write (edited by hand, say) just means: redo that sample.
    return {sample["file"]: sample for sample in samples if _is_record(sample)}


def _is_record(sample: Any) -> bool:
    try:
        source, outputs = sample["source"], sample["outputs"]
        return (
            isinstance(sample["file"], str)
            and isinstance(source["size"], int)
            and isinstance(source["mtime_ns"], int)
            and isinstance(source["sha256"], str)
            and isinstance(outputs, dict)
        )
    except (KeyError, TypeError):
        return False


def _output_names(name: str, formats: tuple[str, ...]) -> dict[str, str]:
    """Output files relative to the output directory, as NVIDIA names them."""
    return {fmt: f"{fmt}/{name}.npy" for fmt in formats}


def _outputs_present(
    output_dir: Path, old: SampleRecord, outputs: dict[str, str], sizes: dict[str, int]
) -> bool:
    """Whether the last run wrote every output (under this transform) and each is whole."""
    for fmt, relative in outputs.items():
        if old["outputs"].get(fmt) != relative:
            return False
        try:
            if (output_dir / relative).stat().st_size != sizes[fmt]:
                return False
        except OSError:
            return False
    return True


def _npy_size(fmt: str) -> int:
    """The exact size of a .npy file of this format (header included)."""
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(_FORMATS[fmt]["shape"], dtype=_FORMATS[fmt]["dtype"]))
    return buffer.tell()


# --- the work, in worker processes ----------------------------------------------------------


@dataclass(frozen=True)
class _Chunk:
    image_dir: Path
    output_dir: Path
    formats: tuple[str, ...]
    jobs: tuple[_Job, ...]


@dataclass(frozen=True)
class _Result:
    record: SampleRecord | None
    recomputed: bool
    error: str | None = None


def _chunks(
    val_set: ValSet,
    output_dir: Path,
    formats: tuple[str, ...],
    jobs: list[_Job],
    chunk_size: int,
) -> Iterator[_Chunk]:
    # Chunks amortise inter-process overhead: each result is a small record, never an array.
    for start in range(0, len(jobs), chunk_size):
        yield _Chunk(
            val_set.image_dir, output_dir, formats, tuple(jobs[start : start + chunk_size])
        )


def _process_chunk(chunk: _Chunk) -> list[_Result]:
    """Process every job of the chunk; stop at the first image that cannot be read."""
    results = []
    for job in chunk.jobs:
        try:
            results.append(_process_one(chunk, job))
        except HarnessError as err:
            results.append(_Result(None, False, str(err)))
            break
        except OSError as err:
            path = chunk.image_dir / job.name
            results.append(_Result(None, False, f"cannot preprocess {path}: {err}"))
            break
    return results


def _process_one(chunk: _Chunk, job: _Job) -> _Result:
    path = chunk.image_dir / job.name
    if not path.is_file():
        raise transform.ImageDecodeError(f"image not found: {path}")
    stat = path.stat()  # before reading: a later edit changes the mtime and is caught next run
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    outputs = _output_names(job.name, chunk.formats)
    recompute = sha256 != job.known_sha256
    if recompute:
        fp32 = transform.preprocess_file(path)
        arrays: dict[str, npt.NDArray[Any]] = {FP32: fp32, INT8_LINEAR: quantize_int8_linear(fp32)}
        for fmt in chunk.formats:
            _save_atomically(chunk.output_dir / outputs[fmt], arrays[fmt])
    source = SourceInfo(size=stat.st_size, mtime_ns=stat.st_mtime_ns, sha256=sha256)
    record = SampleRecord(
        index=job.index, file=job.name, label=job.label, source=source, outputs=outputs
    )
    return _Result(record, recompute)


def _save_atomically(path: Path, array: npt.NDArray[Any]) -> None:
    # No fsync per sample: the rename makes interruptions safe, and after a power loss a damaged
    # file has the wrong size or a bad header, which the next run or the sample store notices.
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    write_bytes_atomic(path, buffer.getvalue())


def _init_worker(parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group: workers ignore it and finish their chunk (each file
    # is renamed into place whole), while the parent stops handing out work and saves the manifest.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent(parent_pid)
    # One OpenCV thread per process: the processes already use every core.
    cv2.setNumThreads(1)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _end_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this worker when its parent ends, even by SIGKILL: a worker whose parent
    is gone would otherwise wait on its task queue forever."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent ended before the line above took effect
        os._exit(1)


def _run_chunks(
    chunks: Iterator[_Chunk], workers: int, on_done: Callable[[list[_Result]], None]
) -> None:
    """Run chunks on a process pool (in-process for one worker), handing results to on_done."""
    if workers == 1:
        for chunk in chunks:
            on_done(_process_chunk(chunk))
        return
    # spawn, not fork: the parent has threads (tqdm's monitor, OpenCV's pool) that fork mishandles.
    context = multiprocessing.get_context("spawn")
    executor = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init_worker, initargs=(os.getpid(),)
    )
    try:
        # A bounded number of chunks in flight: an interruption waits for little, and memory stays
        # flat however many images there are.
        pending: set[Future[list[_Result]]] = set()
        for chunk in chunks:
            pending.add(executor.submit(_process_chunk, chunk))
            if len(pending) >= 2 * workers:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    on_done(future.result())
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                on_done(future.result())
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


# --- manifest -------------------------------------------------------------------------------


def _transform_key() -> dict[str, str]:
    return {"version": TRANSFORM_VERSION, "opencv": cv2.__version__}


class _ManifestWriter:
    """Writes manifest.json atomically, at the end of a run (the journal keeps progress before)."""

    def __init__(self, output_dir: Path, val_set: ValSet, formats: tuple[str, ...]) -> None:
        self.path = output_dir / MANIFEST_NAME
        self.header = {
            "manifest_version": MANIFEST_VERSION,
            "transform": _transform_key(),
            "source_dir": str(val_set.image_dir.resolve()),
            "full_imagenet_validation": val_set.is_full,
            "total": len(val_set),
            "formats": {fmt: _FORMATS[fmt] for fmt in formats},
        }

    def content(self, records: dict[int, SampleRecord]) -> dict[str, Any]:
        return {
            **self.header,
            "complete": len(records) == self.header["total"],
            "samples": [records[index] for index in sorted(records)],
        }

    def is_current(self, records: dict[int, SampleRecord]) -> bool:
        """Whether the manifest on disk already says exactly this (and no run left a journal)."""
        if (self.path.parent / JOURNAL_NAME).exists():
            return False
        on_disk = _read_manifest(self.path)
        return on_disk is not None and on_disk == json.loads(json.dumps(self.content(records)))

    def write(self, records: dict[int, SampleRecord]) -> None:
        write_json_atomic(self.path, self.content(records))


class _Journal:
    """Appends the records of finished samples as JSON lines, after a header line that names the
    transform (lines under another transform's header are never trusted). Appending a chunk's
    lines costs next to nothing, so a killed run loses only the chunks it had in flight."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._started = False

    def append(self, records: list[SampleRecord]) -> None:
        if not records:
            return
        lines = "".join(json.dumps(record) + "\n" for record in records)
        with writing(self.path):
            if not self._started:
                lines = self._start() + lines
                self._started = True
            # Written and closed at once: the kernel has it even if the process is killed next.
            with open(self.path, "a", encoding="utf-8") as journal:
                journal.write(lines)

    def _start(self) -> str:
        """What goes before this run's first lines."""
        header = json.dumps(_journal_header())
        if _journal_lines(self.path)[:1] == [header]:
            # A killed run's journal, of this transform: keep its lines (they count as done). The
            # newline ends a line that run may have left half-written.
            return "\n"
        self.path.unlink(missing_ok=True)
        return header + "\n"

    def remove(self) -> None:
        """The manifest now holds every record: the journal has served."""
        with writing(self.path):
            self.path.unlink(missing_ok=True)


def _journal_header() -> dict[str, Any]:
    return {"journal_version": 1, "transform": _transform_key()}


def _journal_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _journal_records(path: Path) -> list[Any]:
    """The records a journal holds, if written under this transform; torn lines are skipped."""
    lines = _journal_lines(path)
    if lines[:1] != [json.dumps(_journal_header())]:
        return []
    records = []
    for line in lines[1:]:
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # empty, or cut off by a kill mid-write
    return records


def _read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest as a dict, or None if absent, unreadable or of another manifest version."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("manifest_version") != MANIFEST_VERSION:
        return None
    return manifest


# --- housekeeping ---------------------------------------------------------------------------


def _available_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
