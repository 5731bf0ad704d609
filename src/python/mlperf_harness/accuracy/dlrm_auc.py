"""DLRM-v2's accuracy: the ROC AUC over every logged user-item pair, as MLCommons'
`recommendation/dlrm_v2/pytorch/tools/accuracy-dlrm.py` computes it (sklearn's roc_auc_score).

The log layout is the one that script reads by default (`--dtype float32`, no `--day-23-file`):
each sample's response is its pairs' (prediction, ground-truth label) as float32 pairs, pair by
pair; a sample logged twice counts once (its first response), as the script's `seen` set does.
The accuracy line is the script's, character for character; the submission checker reads `AUC=`
from accuracy.txt."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.run_files import ACCURACY_TXT

REFERENCE_AUC = 0.8031  # the official model's AUC on day 23's first half (the README's 80.31%)


def roc_auc(labels: npt.NDArray[np.generic], scores: npt.NDArray[np.generic]) -> float:
    """sklearn's ROC AUC, imported here only (sklearn is slow to import)."""
    from sklearn.metrics import roc_auc_score  # type: ignore[import-untyped]  # no stubs

    if len(np.unique(labels)) < 2:
        raise HarnessError("the AUC needs pairs of both labels; these have only one")
    return float(roc_auc_score(labels, scores))


@dataclass(frozen=True)
class DlrmAccuracy:
    auc: float
    good: int  # pairs whose rounded prediction equals the label
    total: int  # pairs
    queries: int  # distinct samples

    @property
    def accuracy(self) -> float:
        return self.good / self.total if self.total else 0.0

    def line(self) -> str:
        return (
            f"AUC={100.0 * self.auc:.3f}%, accuracy={100.0 * self.accuracy:.3f}%, "
            f"good={self.good}, total={self.total}, queries={self.queries}"
        )


def logged_pairs(
    accuracy_log: Path,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], int]:
    """(predictions, labels, distinct samples) of every pair in the log, in the script's order."""
    seen: set[int] = set()
    parts = []
    for response in read_accuracy_log(accuracy_log):
        if response.qsl_idx in seen:
            continue
        seen.add(response.qsl_idx)
        if len(response.data) % 8:
            raise HarnessError(
                f"{accuracy_log}: sample {response.qsl_idx}'s response is {len(response.data)} "
                "bytes, not float32 (prediction, label) pairs"
            )
        parts.append(np.frombuffer(response.data, dtype=np.float32).reshape(-1, 2))
    if not parts:
        raise HarnessError(f"{accuracy_log} holds no responses")
    pairs = np.concatenate(parts)
    return pairs[:, 0], pairs[:, 1], len(seen)


def score_accuracy_log(accuracy_log: Path) -> DlrmAccuracy:
    predictions, labels, queries = logged_pairs(accuracy_log)
    # The script rounds each float32 prediction (numpy's round half to even) and compares.
    good = int(np.count_nonzero(np.round(predictions) == labels))
    return DlrmAccuracy(roc_auc(labels, predictions), good, len(labels), queries)


def write_accuracy_txt(log_dir: Path, accuracy: DlrmAccuracy) -> Path:
    path = log_dir / ACCURACY_TXT
    write_bytes_atomic(path, (accuracy.line() + "\n").encode())
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """AUC over every pair of a DLRM-v2 accuracy run's mlperf_log_accuracy.json."""
    parser = OneLineParser(prog="accuracy_dlrm", description=main.__doc__)
    parser.add_argument("--mlperf_accuracy_file", type=Path, required=True)
    parser.add_argument("--log_dir", type=Path, help=f"also write {ACCURACY_TXT} there")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        accuracy = score_accuracy_log(args.mlperf_accuracy_file)
        if args.log_dir is not None:
            write_accuracy_txt(args.log_dir, accuracy)
        print(accuracy.line())
        return 0

    return run_entry_point(parser.prog, run)


if __name__ == "__main__":
    sys.exit(main())
