"""LibriSpeech as MLCommons' RNN-T reference reads it: a data directory holding the WAV files and a
JSON manifest (`dev-clean-wav.json`, written by the reference's convert_librispeech.py), a list of
utterances each with `files` ([{"fname": <path under the data directory>, "speed": 1, ...}]),
`original_duration` (seconds) and `transcript`. As the reference's Manifest (normalize=True,
max_duration=15.0, speed 1): utterances over 15 s are left out, the rest keep their order (dev-clean:
2,513 of 2,703), and each transcript is normalised (alphabet.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.datasets.librispeech.alphabet import normalize_transcript
from mlperf_harness.errors import HarnessError

MANIFEST_FILE = "dev-clean-wav.json"
MAX_DURATION_S = 15.0
DEV_CLEAN_UTTERANCES = 2513  # of 2,703, at most 15 s


@dataclass(frozen=True)
class Utterance:
    audio: Path
    transcript: str  # normalised
    duration: float


@dataclass(frozen=True)
class LibriSpeechSet:
    data_dir: Path
    manifest: Path
    utterances: tuple[Utterance, ...]

    def __len__(self) -> int:
        return len(self.utterances)

    @property
    def is_full(self) -> bool:
        return len(self.utterances) == DEV_CLEAN_UTTERANCES

    def describe(self) -> str:
        return f"LibriSpeech {self.manifest.name} ({len(self)} utterances of at most 15 s in {self.data_dir})"


def read_manifest(data_dir: Path, manifest: Path | None = None) -> LibriSpeechSet:
    """The utterances the reference scores; one line for a missing or malformed manifest."""
    path = manifest or data_dir / MANIFEST_FILE
    if not path.is_file():
        raise HarnessError(
            f"no LibriSpeech manifest at {path}: download dev-clean and convert it to WAV with "
            f"MLCommons' convert_librispeech.py (it writes {MANIFEST_FILE}), docs/rnnt.md"
        )
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise HarnessError(f"cannot read the manifest {path}: {error}") from None
    if not isinstance(entries, list):
        raise HarnessError(f"{path} is not a LibriSpeech manifest: not a list of utterances")
    utterances = []
    for number, entry in enumerate(entries):
        where = f"{path}: utterance {number}"
        try:
            duration = float(entry["original_duration"])
            files = [f for f in entry["files"] if float(f.get("speed", 1)) == 1.0]
            fname = str(files[0]["fname"])
            text = str(entry["transcript"])
        except (KeyError, IndexError, TypeError, ValueError):
            raise HarnessError(
                f"{where} lacks original_duration, transcript or a speed-1 file's fname"
            ) from None
        if duration > MAX_DURATION_S:
            continue
        utterances.append(Utterance(data_dir / fname, normalize_transcript(text, where), duration))
    if not utterances:
        raise HarnessError(f"{path} lists no utterance of at most {MAX_DURATION_S:g} s")
    return LibriSpeechSet(data_dir, path, tuple(utterances))


def manifest_entry(
    fname: str, transcript: str, samples: int, sample_rate: int
) -> dict[str, object]:
    """One utterance in the reference's manifest format (what convert_librispeech.py writes)."""
    duration = samples / sample_rate
    return {
        "files": [
            {
                "channels": 1,
                "sample_rate": float(sample_rate),
                "bitrate": 16,
                "duration": duration,
                "num_samples": samples,
                "encoding": "Signed Integer PCM",
                "silent": False,
                "fname": fname,
                "speed": 1,
            }
        ],
        "original_duration": duration,
        "original_num_samples": samples,
        "transcript": transcript,
    }
