"""LibriSpeech utterances -> RNN-T's features (features.py), incrementally, with a manifest.

    <output_dir>/features/<index>.npy   float32 [frames, 240]
    <output_dir>/manifest.json          per utterance: its audio file (size, mtime), frames and
                                        normalised transcript; the feature pipeline's version
    <output_dir>/manifest.journal       while a run works: one line per utterance finished

Each array is written to a temporary name and renamed and each finished utterance is appended to the
journal at once: an interrupted run loses only the utterance in flight and the next one resumes. An
utterance is up to date when the manifest or journal of the same pipeline recorded its audio's size
and mtime and its array exists. A corrupt audio file stops the run with one line naming it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from mlperf_harness.atomic import remove_stale_temporaries, write_bytes_atomic, write_json_atomic
from mlperf_harness.datasets.librispeech.features import FEATURES, log_mel_features
from mlperf_harness.datasets.librispeech.manifest import LibriSpeechSet
from mlperf_harness.datasets.librispeech.wav import read_wav
from mlperf_harness.errors import HarnessError
from mlperf_harness.progress import bar_disabled
from mlperf_harness.scratch_lock import exclusive
from mlperf_harness.write_errors import writing

MANIFEST_NAME = "manifest.json"
JOURNAL_NAME = "manifest.journal"
PIPELINE = "mlperf-rnnt-logmel-80x3/1"  # bump when features.py's output changes


@dataclass(frozen=True)
class PreprocessReport:
    total: int
    processed: int
    skipped: int
    seconds: float


def _npy(array: npt.NDArray[np.float32]) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _previous(output_dir: Path) -> dict[str, dict[str, Any]]:
    records: list[Any] = []
    try:
        manifest = json.loads((output_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        if manifest.get("pipeline") == PIPELINE:
            records += manifest.get("samples", [])
    except (OSError, ValueError, AttributeError):
        pass
    try:
        lines = (output_dir / JOURNAL_NAME).read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    if lines and lines[0] == PIPELINE:
        for line in lines[1:]:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue  # a line cut off by a kill
    return {r["audio"]: r for r in records if isinstance(r, dict) and "audio" in r}


def _current(record: dict[str, Any] | None, audio: Path, output_dir: Path) -> bool:
    if record is None:
        return False
    try:
        stat = audio.stat()
    except OSError:
        return False
    return [record.get("size"), record.get("mtime_ns")] == [stat.st_size, stat.st_mtime_ns] and (
        output_dir / str(record.get("features"))
    ).is_file()


def preprocess_librispeech(
    dataset: LibriSpeechSet, output_dir: Path, *, progress: bool = True
) -> PreprocessReport:
    started = time.monotonic()
    with exclusive(output_dir, "preprocessing"):
        with writing(output_dir):
            (output_dir / "features").mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries([output_dir, output_dir / "features"])
        previous = _previous(output_dir)
        records: list[dict[str, Any]] = []
        journal = output_dir / JOURNAL_NAME
        with writing(journal):
            if (
                not journal.is_file()
                or journal.read_text(encoding="utf-8").split("\n")[0] != PIPELINE
            ):
                journal.write_text(PIPELINE + "\n", encoding="utf-8")
        processed = 0
        with tqdm(
            total=len(dataset), unit="utt", desc="preprocess", disable=bar_disabled(progress)
        ) as bar:
            for index, utterance in enumerate(dataset.utterances):
                key = str(utterance.audio.relative_to(dataset.data_dir))
                record = previous.get(key)
                if not _current(record, utterance.audio, output_dir):
                    features = log_mel_features(read_wav(utterance.audio))
                    name = f"features/{index:05d}.npy"
                    write_bytes_atomic(output_dir / name, _npy(features))
                    stat = utterance.audio.stat()
                    record = {
                        "audio": key,
                        "size": stat.st_size,
                        "mtime_ns": stat.st_mtime_ns,
                        "features": name,
                        "frames": int(features.shape[0]),
                    }
                    with writing(journal), open(journal, "a", encoding="utf-8") as out:
                        out.write(json.dumps(record) + "\n")
                    processed += 1
                assert record is not None
                records.append({**record, "transcript": utterance.transcript})
                bar.update(1)
        write_json_atomic(
            output_dir / MANIFEST_NAME,
            {"pipeline": PIPELINE, "manifest": str(dataset.manifest), "samples": records},
        )
        with writing(journal):
            journal.unlink(missing_ok=True)
    return PreprocessReport(
        len(dataset), processed, len(dataset) - processed, time.monotonic() - started
    )


@dataclass(frozen=True)
class PreprocessedUtterances:
    """A preprocessed directory's features, padded into one array, with lengths and transcripts."""

    directory: Path
    features: npt.NDArray[np.float32]  # [N, max frames (even), 240]
    lengths: npt.NDArray[np.int64]  # [N] frames
    transcripts: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.lengths)


def load_preprocessed(directory: Path) -> PreprocessedUtterances:
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise HarnessError(
            f"no preprocessed LibriSpeech features in {directory}: run preprocess_data"
        ) from None
    if manifest.get("pipeline") != PIPELINE:
        raise HarnessError(f"{directory} was preprocessed by another pipeline: run preprocess_data")
    samples = manifest["samples"]
    lengths = np.array([int(s["frames"]) for s in samples], np.int64)
    longest = int(lengths.max()) + int(lengths.max()) % 2  # even: time stacking pairs frames
    features = np.zeros((len(samples), longest, FEATURES), np.float32)
    for index, sample in enumerate(samples):
        try:
            array = np.load(directory / sample["features"], allow_pickle=False)
        except (OSError, ValueError):
            raise HarnessError(
                f"{directory / sample['features']} is missing or damaged: run preprocess_data"
            ) from None
        features[index, : len(array)] = array
    return PreprocessedUtterances(
        directory, features, lengths, tuple(str(s["transcript"]) for s in samples)
    )
