"""RNN-T's embedded default: generated speech (stand_in_audio.py) written as 16 kHz WAV files with a
manifest in the reference's format, preprocessed by the benchmark's own feature pipeline, and an
RNN-T of the reference's topology at reduced width whose LSTMs are seeded and whose joint network is
fitted with NumPy on separate generated training utterances (stand_in_model.py); built once per
scratch path (about a minute on a 2-core CPU) and kept with a record of its held-out WER, measured at
build time by the benchmark's own greedy decoder on ONNX Runtime and its WER. Everything it makes is
marked "stand-in: not a valid MLPerf result".

`pants run benchmarks/rnnt:stand_in` builds it on its own and prints what it measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.librispeech_wer import score_transcripts
from mlperf_harness.atomic import remove_stale_temporaries, write_json_atomic
from mlperf_harness.benchmarks.rnnt import stand_in_audio
from mlperf_harness.benchmarks.rnnt.model_files import RnntModelFiles, write_model_files
from mlperf_harness.benchmarks.rnnt.onnx_graphs import ENCODER, PREDICTION, rnnt_models
from mlperf_harness.benchmarks.rnnt.runners import RnntSessions
from mlperf_harness.benchmarks.rnnt.stand_in_model import (
    SIZES,
    JointFit,
    fit_joint,
    prediction_outputs,
    stand_in_weights,
    training_pairs,
)
from mlperf_harness.benchmarks.stand_in_cli import run_stand_in, stand_in_parser
from mlperf_harness.datasets.librispeech.alphabet import decode, encode
from mlperf_harness.datasets.librispeech.features import SAMPLE_RATE, log_mel_features
from mlperf_harness.datasets.librispeech.manifest import (
    MANIFEST_FILE,
    manifest_entry,
    read_manifest,
)
from mlperf_harness.datasets.librispeech.preprocess import load_preprocessed, preprocess_librispeech
from mlperf_harness.datasets.librispeech.wav import wav_bytes, write_wav
from mlperf_harness.errors import HarnessError
from mlperf_harness.records import read_record
from mlperf_harness.scratch_lock import build_once

SEED = 0
TRAINING_UTTERANCES = 1000
HELDOUT_UTTERANCES = 200  # the benchmark's samples, and the set its WER is measured on
# Held-out WER (percent) above which the build fails; chance (a random symbol per frame) is ~100%.
REQUIRED_WER = 40.0
BATCH = 32
MODEL_DIR, DATA_DIR, PREPROCESSED_DIR = "model", "LibriSpeech", "preprocessed"
RECORD_FILE_NAME = "stand_in.json"
NOT_VALID = "stand-in: not a valid MLPerf result"
ACTIVITY = "building the RNN-T stand-in"


@dataclass(frozen=True)
class StandInRecord:
    sha256: str
    seed: int
    encoder_hidden: int
    prediction_hidden: int
    joint_hidden: int
    heldout_wer_percent: float
    heldout_utterances: int
    heldout_words: int
    training_utterances: int
    training_pairs: int
    final_loss: float
    build_seconds: float
    note: str = NOT_VALID


@dataclass(frozen=True)
class BuiltStandIn:
    model: Path
    data_dir: Path  # the reference's layout: dev-clean-wav.json and dev-clean-wav/*.wav
    preprocessed: Path
    record: StandInRecord


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "rnnt" / f"e{SIZES.encoder_hidden}-seed{SEED}"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def ensure_stand_in(scratch: Path, progress: bool = True) -> BuiltStandIn:
    """The stand-in's files, built when absent; runs sharing a scratch path build it once."""
    work_dir = stand_in_dir(scratch)
    record_path = work_dir / RECORD_FILE_NAME

    def built(record: StandInRecord) -> BuiltStandIn:
        return BuiltStandIn(
            work_dir / MODEL_DIR, work_dir / DATA_DIR, work_dir / PREPROCESSED_DIR, record
        )

    def find() -> BuiltStandIn | None:
        record = read_record(StandInRecord, record_path)
        if record is None:
            return None
        try:
            files = RnntModelFiles.read(work_dir / MODEL_DIR)
            if files.sha256 != record.sha256 or not files.weights_file.is_file():
                return None  # (a build from before weights.npz: the GPU engine reads it)
            load_preprocessed(work_dir / PREPROCESSED_DIR)
        except HarnessError:
            return None
        return built(record)

    def build() -> BuiltStandIn:
        remove_stale_temporaries([work_dir])
        _say(
            "rnnt: no model given; building the stand-in (generated speech and an RNN-T of the "
            f"reference's topology at reduced width fitted to it, about a minute) in {work_dir}"
        )
        record = _build(work_dir, progress)
        write_json_atomic(record_path, dataclasses.asdict(record))
        return built(record)

    return build_once(work_dir, ACTIVITY, find, build)


def _as_written(samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The samples as a 16-bit WAV holds them (what the held-out utterances go through)."""
    pcm = np.frombuffer(wav_bytes(samples)[44:], dtype="<i2")
    result: npt.NDArray[np.float32] = pcm.astype(np.float32) / np.float32(32768.0)
    return result


def write_heldout(data_dir: Path, words: tuple[str, ...], count: int) -> None:
    """The held-out utterances as the reference's layout: WAV files and dev-clean-wav.json."""
    entries = []
    for index in range(count):
        utterance = stand_in_audio.utterance(SEED, "validation", index, words)
        fname = f"dev-clean-wav/stand-in/{index:05d}.wav"
        write_wav(data_dir / fname, utterance.samples)
        entries.append(manifest_entry(fname, utterance.text, len(utterance.samples), SAMPLE_RATE))
    write_json_atomic(data_dir / MANIFEST_FILE, entries)


def _build(work_dir: Path, progress: bool) -> StandInRecord:
    started = time.monotonic()
    words = stand_in_audio.vocabulary(SEED)
    _say(f"rnnt stand-in: writing {HELDOUT_UTTERANCES} held-out utterances and their features")
    write_heldout(work_dir / DATA_DIR, words, HELDOUT_UTTERANCES)
    dataset = read_manifest(work_dir / DATA_DIR)
    preprocess_librispeech(dataset, work_dir / PREPROCESSED_DIR, progress=progress)
    _say(f"rnnt stand-in: generating {TRAINING_UTTERANCES} training utterances")
    training = [
        stand_in_audio.utterance(SEED, "train", index, words)
        for index in range(TRAINING_UTTERANCES)
    ]
    features = [log_mel_features(_as_written(u.samples)) for u in training]
    weights = stand_in_weights(SEED)
    models = rnnt_models(weights, SIZES, "", {})
    sessions = RnntSessions(
        {part: models[part].SerializeToString() for part in (ENCODER, PREDICTION)}, SIZES
    )
    _say("rnnt stand-in: encoding them with the seeded encoder")
    encoded = []
    for start in range(0, len(features), BATCH):
        chunk = features[start : start + BATCH]
        lengths = np.array([len(f) for f in chunk], np.int64)
        longest = int(lengths.max()) + int(lengths.max()) % 2
        padded = np.zeros((len(chunk), longest, chunk[0].shape[1]), np.float32)
        for row, array in enumerate(chunk):
            padded[row, : len(array)] = array
        out, frames = sessions.encode(padded, lengths)
        encoded += [out[row, : frames[row]] for row in range(len(chunk))]
    transcripts = [encode(u.text) for u in training]
    predicted = prediction_outputs(sessions.prediction, transcripts)
    inputs, targets = training_pairs(encoded, predicted, transcripts, [u.spans for u in training])
    _say(f"rnnt stand-in: fitting the joint network on {len(targets)} (frame, state) pairs")
    losses: list[float] = []

    def on_epoch(epoch: int, loss: float) -> None:
        losses.append(loss)
        _say(f"  epoch {epoch + 1}: loss {loss:.4f}")

    fit_joint(inputs, targets, weights, JointFit(seed=SEED), on_epoch)
    doc = (
        "NOT the official MLPerf RNN-T: its topology at reduced width, seeded LSTMs and a joint "
        f"network fitted on generated speech (seed {SEED}); no valid MLPerf result."
    )
    metadata = {"mlperf_harness.rnnt_stand_in": NOT_VALID, "mlperf_harness.seed": str(SEED)}
    files = write_model_files(
        work_dir / MODEL_DIR, rnnt_models(weights, SIZES, doc, metadata), weights, SIZES, True, doc
    )
    _say("rnnt stand-in: measuring WER on the held-out utterances (the benchmark's decoder)")
    errors, total_words = heldout_errors(files, work_dir / PREPROCESSED_DIR)
    wer = 100.0 * errors / total_words
    _say(f"rnnt stand-in: held-out WER {wer:.3f}% over {HELDOUT_UTTERANCES} utterances")
    if wer > REQUIRED_WER:
        raise HarnessError(
            f"the RNN-T stand-in reached only WER {wer:.3f}% on held-out utterances (needs at "
            f"most {REQUIRED_WER}%); report this as a bug"
        )
    return StandInRecord(
        sha256=files.sha256,
        seed=SEED,
        encoder_hidden=SIZES.encoder_hidden,
        prediction_hidden=SIZES.prediction_hidden,
        joint_hidden=SIZES.joint_hidden,
        heldout_wer_percent=round(wer, 3),
        heldout_utterances=HELDOUT_UTTERANCES,
        heldout_words=total_words,
        training_utterances=TRAINING_UTTERANCES,
        training_pairs=len(targets),
        final_loss=round(losses[-1], 5),
        build_seconds=round(time.monotonic() - started, 1),
    )


def heldout_errors(files: RnntModelFiles, preprocessed: Path) -> tuple[int, int]:
    """(word errors, words) of the model's greedy transcripts of a preprocessed set."""
    utterances = load_preprocessed(preprocessed)
    sessions = RnntSessions(files.graphs(), files.sizes)
    hypotheses = []
    for start in range(0, len(utterances), BATCH):
        out = sessions.transcribe(
            utterances.features[start : start + BATCH], utterances.lengths[start : start + BATCH]
        )
        hypotheses += [decode(row[1 : 1 + row[0]]) for row in out]
    return score_transcripts(hypotheses, utterances.transcripts)


def main(argv: Sequence[str] | None = None) -> int:
    def report(_args: argparse.Namespace, built: BuiltStandIn) -> None:
        print(f"model {built.model}\ndata {built.data_dir}\npreprocessed {built.preprocessed}")

    return run_stand_in(stand_in_parser("RNN-T"), argv, ensure_stand_in, report, NOT_VALID)


if __name__ == "__main__":
    sys.exit(main())
