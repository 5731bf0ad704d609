"""Top-1 accuracy of an ImageNet classifier from LoadGen's accuracy log.

Same rules as MLCommons' `accuracy-imagenet.py --dtype int32`: each response's data starts with the
predicted ImageNet label (0-999) as int32; `qsl_idx` indexes val_map.txt; a sample LoadGen logged
twice counts once. `accuracy.txt` is written in that tool's words.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.datasets.imagenet.layout import parse_val_map
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.run_files import ACCURACY_TXT


@dataclass(frozen=True)
class Top1Accuracy:
    good: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.good / self.total if self.total else 0.0

    def line(self) -> str:
        """The line MLCommons' script prints, character for character."""
        return f"accuracy={self.percent:.3f}%, good={self.good}, total={self.total}"

    def meets(self, reference_percent: float, fraction: float) -> bool:
        return self.percent >= reference_percent * fraction


def top1_from_log(accuracy_log: Path, labels: Sequence[int]) -> Top1Accuracy:
    seen: set[int] = set()
    good = 0
    for response in read_accuracy_log(accuracy_log):
        index = response.qsl_idx
        if index in seen:
            continue
        seen.add(index)
        if index >= len(labels):
            raise HarnessError(
                f"{accuracy_log}: qsl_idx {index} is beyond the {len(labels)} labels"
            )
        if len(response.data) < 4:
            raise HarnessError(f"{accuracy_log}: response for qsl_idx {index} holds no int32 label")
        predicted = int(np.frombuffer(response.data[:4], dtype=np.int32)[0])
        good += predicted == labels[index]
    return Top1Accuracy(good=good, total=len(seen))


def write_accuracy_txt(log_dir: Path, accuracy: Top1Accuracy) -> Path:
    path = log_dir / ACCURACY_TXT
    write_bytes_atomic(path, (accuracy.line() + "\n").encode())
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """The accuracy check on its own: score an existing accuracy log against a val_map.txt."""
    parser = OneLineParser(prog="accuracy_imagenet", description=main.__doc__)
    parser.add_argument("--mlperf_accuracy_file", type=Path, required=True)
    parser.add_argument("--val_map", type=Path, required=True, help="the run's val_map.txt")
    parser.add_argument("--count", type=positive_int, help="only the first N labels were run")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        labels = [label for _, label in parse_val_map(args.val_map)]
        print(top1_from_log(args.mlperf_accuracy_file, labels[: args.count]).line())
        return 0

    return run_entry_point(parser.prog, run)


if __name__ == "__main__":
    raise SystemExit(main())
