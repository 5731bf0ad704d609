"""Preprocess a KiTS19 data directory into the reference's layout (store.py), case by case,
resumably.

A case is done when the manifest records it from the same source files (sizes and mtimes of both,
read from the same directory) under the same preprocessing, NumPy and SciPy, and its three output
files are there at the recorded sizes: it is then not read again. The manifest is rewritten after
each case (43 small records), so a run that is stopped or meets a bad case keeps what it finished;
preprocessed_files.pkl and the manifest's "complete" come only when every case is done. A
directory that is up to date is only read; otherwise one run at a time writes it (scratch_lock),
and a run that waited finds the work done.

One case takes seconds to a minute (a CT volume of ~100-600 slices resampled in one thread, as the
reference's worker does); cases run one after another, with a progress bar.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy  # type: ignore[import-untyped]  # no stubs published
from tqdm import tqdm

from mlperf_harness.atomic import remove_stale_temporaries, write_bytes_atomic, write_json_atomic
from mlperf_harness.datasets.kits19.layout import (
    IMAGING_NAME,
    INFERENCE_CASES,
    SEGMENTATION_NAME,
    KitsLayout,
    check_layout,
    read_case,
)
from mlperf_harness.datasets.kits19.nifti import nifti_gz_bytes
from mlperf_harness.datasets.kits19.store import (
    INDEX_NAME,
    MANIFEST_NAME,
    MANIFEST_VERSION,
    NIFTI_DIR,
    PICKLE_PROTOCOL,
    PREPROCESSING_VERSION,
    PreprocessedCase,
    case_pickle_name,
    nifti_names,
    output_record,
    read_manifest,
    reference_index_bytes,
)
from mlperf_harness.datasets.kits19.transform import preprocess_case, reshaped_affine, zoom_factor
from mlperf_harness.errors import HarnessError
from mlperf_harness.progress import bar_disabled
from mlperf_harness.scratch_lock import exclusive
from mlperf_harness.write_errors import check_directory_path


@dataclass(frozen=True)
class KitsPreprocessReport:
    output_dir: Path
    cases: int
    processed: int  # preprocessed in this run
    skipped: int  # already done
    seconds: float
    inference_set: bool  # the 43 cases of MLPerf's accuracy run


def preprocess_dataset(
    data_dir: Path,
    output_dir: Path,
    *,
    cases: Sequence[str] = INFERENCE_CASES,
    progress: bool = True,
) -> KitsPreprocessReport:
    """Bring output_dir up to date with these cases of data_dir (default: MLPerf's 43)."""
    layout = check_layout(data_dir, cases)
    check_directory_path(output_dir, "the preprocessed KiTS19 directory")
    started = time.monotonic()

    def report(processed: int) -> KitsPreprocessReport:
        return KitsPreprocessReport(
            output_dir,
            cases=len(layout.cases),
            processed=processed,
            skipped=len(layout.cases) - processed,
            seconds=time.monotonic() - started,
            inference_set=layout.is_inference_set,
        )

    records, todo = _plan(layout, output_dir)
    if not todo and _is_complete(output_dir, layout):  # nothing to write: no lock, no write
        return report(0)
    with exclusive(output_dir, "preprocessing KiTS19"):
        output_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(
            [output_dir, *(output_dir / NIFTI_DIR / case for case in layout.cases)]
        )
        # Again, now that the directory is ours: the run we may have waited for did the work.
        records, todo = _plan(layout, output_dir)
        # First of all: the set is not complete any more (an older index must not be trusted).
        _write_manifest(output_dir, layout, records, index=None)
        with tqdm(
            total=len(layout.cases),
            initial=len(layout.cases) - len(todo),
            unit="case",
            desc="preprocess KiTS19",
            disable=bar_disabled(progress),
        ) as bar:
            for case in todo:
                records[case] = _preprocess_one(layout, case, output_dir)
                _write_manifest(output_dir, layout, records, index=None)
                bar.update(1)
        ordered = [records[case].case for case in layout.cases]
        index = reference_index_bytes(ordered, [records[case].case_record for case in ordered])
        write_bytes_atomic(output_dir / INDEX_NAME, index)
        _write_manifest(output_dir, layout, records, index=output_record(index))
    return report(len(todo))


@dataclass(frozen=True)
class _Done:
    """A case's manifest entry: where it came from, and what it made."""

    case_record: PreprocessedCase
    source: dict[str, Any]

    @property
    def case(self) -> str:
        return self.case_record.case


def _preprocess_one(layout: KitsLayout, case: str, output_dir: Path) -> _Done:
    source_dir = layout.sources[case]
    source = _source_stats(source_dir)  # before reading: a later edit is caught next run
    try:
        raw = read_case(source_dir)
        # Before the resampling (seconds): an affine the reference cannot take fails at once.
        affine = reshaped_affine(raw.affine)
        image, label = preprocess_case(raw.image, raw.label, raw.spacing)
    except HarnessError as error:
        raise HarnessError(f"cannot preprocess KiTS19 {case}: {error}") from None
    outputs: dict[str, dict[str, Any]] = {}
    files = {
        case_pickle_name(case): pickle.dumps([image, label], protocol=PICKLE_PROTOCOL),
        nifti_names(case)[0]: nifti_gz_bytes(np.squeeze(image, 0), affine),
        nifti_names(case)[1]: nifti_gz_bytes(np.squeeze(label, 0), affine),
    }
    for relative, data in files.items():
        write_bytes_atomic(output_dir / relative, data)
        outputs[relative] = output_record(data)
    record = PreprocessedCase(
        case=case,
        shape=(image.shape[0], image.shape[1], image.shape[2], image.shape[3]),
        original_affine=raw.affine,
        reshaped_affine=affine,
        zoom_factor=zoom_factor(raw.spacing),
        outputs=outputs,
    )
    return _Done(record, source)


# --- the manifest: what is done --------------------------------------------------------------


def _made_with() -> dict[str, str]:
    return {
        "preprocessing": PREPROCESSING_VERSION,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
    }


def _source_stats(case_dir: Path) -> dict[str, Any]:
    stats: dict[str, Any] = {"dir": str(case_dir.resolve())}
    for name in (IMAGING_NAME, SEGMENTATION_NAME):
        stat = (case_dir / name).stat()
        stats[name] = {"bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    return stats


def _plan(layout: KitsLayout, output_dir: Path) -> tuple[dict[str, _Done], list[str]]:
    """The cases already done (their records) and, in order, those still to do."""
    manifest = read_manifest(output_dir)
    previous: dict[str, Any] = {}
    if manifest is not None and manifest.get("made_with") == _made_with():
        listed = manifest.get("cases")
        previous = listed if isinstance(listed, dict) else {}
    done: dict[str, _Done] = {}
    todo: list[str] = []
    for case in layout.cases:
        entry = previous.get(case)
        try:
            record = PreprocessedCase.from_json(case, entry)
            fresh = (
                isinstance(entry, dict)
                and entry["source"] == _source_stats(layout.sources[case])
                and all(
                    (output_dir / name).stat().st_size == out["bytes"]
                    for name, out in record.outputs.items()
                )
            )
        except (KeyError, TypeError, ValueError, OSError):
            fresh = False  # absent, of another version, or edited by hand: do it again
        if fresh and entry is not None:
            done[case] = _Done(record, entry["source"])
        else:
            todo.append(case)
    return done, todo


def _is_complete(output_dir: Path, layout: KitsLayout) -> bool:
    manifest = read_manifest(output_dir)
    if (
        manifest is None
        or not manifest.get("complete")
        or manifest.get("made_with") != _made_with()
    ):
        return False
    try:
        index_bytes = (output_dir / INDEX_NAME).stat().st_size
        return bool(
            manifest["file_list"] == layout.cases
            and index_bytes == manifest["files"][INDEX_NAME]["bytes"]
        )
    except (KeyError, TypeError, OSError):
        return False


def _write_manifest(
    output_dir: Path, layout: KitsLayout, records: dict[str, _Done], index: dict[str, Any] | None
) -> None:
    """The manifest; complete (with the index's record) only when every case is done."""
    complete = index is not None and all(case in records for case in layout.cases)
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "made_with": _made_with(),
        "preprocessing": PREPROCESSING_VERSION,
        "data_dir": str(layout.data_dir),
        "complete": complete,
        "inference_set": layout.is_inference_set,
        "file_list": layout.cases,
        "files": {INDEX_NAME: index} if complete else {},
        # In sample order: only the cases of this list (files of others stay on disk, unlisted).
        "cases": {
            case: {**records[case].case_record.to_json(), "source": records[case].source}
            for case in layout.cases
            if case in records
        },
    }
    write_json_atomic(output_dir / MANIFEST_NAME, manifest)
