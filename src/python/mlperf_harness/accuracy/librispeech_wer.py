"""RNN-T's accuracy: the word error rate over an accuracy run's greedy transcripts, as MLCommons'
`retired_benchmarks/speech_recognition/rnnt/accuracy_eval.py` computes it.

Each logged response is a sample's symbol ids as int64 (the script's default --output_dtype), joined
into text through the 28 labels; each reference is the manifest's normalised transcript of the
response's qsl_idx. The WER is the sum over responses (every one in the log, as the script iterates
them) of the word-level Levenshtein distance between hypothesis and reference (both split on
whitespace), over the sum of the references' words. The accuracy line is the script's, character
for character (Python's repr of the two floats); the v4.0 submission checker reads `accuracy=` from
it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.datasets.librispeech.alphabet import decode
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.run_files import ACCURACY_TXT

REFERENCE_WER = 7.452  # percent: the published checkpoint's greedy WER on dev-clean (<= 15 s)
SYMBOL_BYTES = 8  # int64


def word_distance(hypothesis: Sequence[str], reference: Sequence[str]) -> int:
    """Levenshtein distance between two word lists (insertions, deletions, substitutions)."""
    if len(hypothesis) > len(reference):
        hypothesis, reference = reference, hypothesis
    row = list(range(len(hypothesis) + 1))
    for i, word in enumerate(reference, start=1):
        previous, row = row, [i] + [0] * len(hypothesis)
        for j, other in enumerate(hypothesis, start=1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (other != word))
    return row[-1]


@dataclass(frozen=True)
class WerResult:
    errors: int
    words: int
    responses: int
    samples: int  # distinct qsl_idx

    @property
    def wer(self) -> float:
        return self.errors / self.words if self.words else float("inf")

    def line(self) -> str:
        return f"Word Error Rate: {self.wer * 100}%, accuracy={(1 - self.wer) * 100}%"


def score_transcripts(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[int, int]:
    errors = words = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        reference_words = reference.split()
        words += len(reference_words)
        errors += word_distance(hypothesis.split(), reference_words)
    return errors, words


def score_accuracy_log(accuracy_log: Path, transcripts: Sequence[str]) -> WerResult:
    hypotheses, references, seen = [], [], set()
    for response in read_accuracy_log(accuracy_log):
        if not 0 <= response.qsl_idx < len(transcripts):
            raise HarnessError(
                f"{accuracy_log}: qsl_idx {response.qsl_idx} is not one of the "
                f"{len(transcripts)} utterances"
            )
        if len(response.data) % SYMBOL_BYTES:
            raise HarnessError(
                f"{accuracy_log}: sample {response.qsl_idx}'s response is {len(response.data)} "
                "bytes, not int64 symbol ids"
            )
        hypotheses.append(decode(np.frombuffer(response.data, dtype="<i8")))
        references.append(transcripts[response.qsl_idx])
        seen.add(response.qsl_idx)
    if not hypotheses:
        raise HarnessError(f"{accuracy_log} holds no responses")
    errors, words = score_transcripts(hypotheses, references)
    return WerResult(errors, words, len(hypotheses), len(seen))


def write_accuracy_txt(log_dir: Path, result: WerResult) -> Path:
    path = log_dir / ACCURACY_TXT
    write_bytes_atomic(path, (result.line() + "\n").encode())
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """WER of an RNN-T accuracy run's mlperf_log_accuracy.json against a LibriSpeech manifest."""
    from mlperf_harness.datasets.librispeech.manifest import read_manifest

    parser = OneLineParser(prog="accuracy_rnnt", description=main.__doc__)
    parser.add_argument("--mlperf_accuracy_file", type=Path, required=True)
    parser.add_argument("--dataset_dir", type=Path, required=True)
    parser.add_argument("--manifest", type=Path, help="default: <dataset_dir>/dev-clean-wav.json")
    parser.add_argument("--log_dir", type=Path, help=f"also write {ACCURACY_TXT} there")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        dataset = read_manifest(args.dataset_dir, args.manifest)
        result = score_accuracy_log(
            args.mlperf_accuracy_file, [u.transcript for u in dataset.utterances]
        )
        if args.log_dir is not None:
            write_accuracy_txt(args.log_dir, result)
        print(result.line())
        return 0

    return run_entry_point(parser.prog, run)


if __name__ == "__main__":
    sys.exit(main())
