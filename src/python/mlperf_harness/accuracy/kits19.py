"""Mean DICE of kidney and tumour of a 3D-UNet run on KiTS19, from LoadGen's accuracy log.

The rules of MLCommons' `vision/medical_imaging/3d-unet-kits19/accuracy_kits.py`, whose printed
line this prints:

- each response is one case's segmentation (`qsl_idx` = position in the preprocessed set's
  file_list): uint8 labels (0 background, 1 kidney, 2 tumour) of the whole padded volume, C order,
  [1, D, H, W] as the preprocessed image's shape. Nothing is un-padded: the reference compares
  the whole padded prediction with the whole padded ground truth (the preprocessed
  `nifti/<case>/segmentation.nii.gz`, padding labelled 0);
- per case and class c in (kidney, tumour): DICE = (2 |P=c and T=c| + 1e-6) / (|P=c| + |T=c| + 1e-6)
  in float64 (a class absent from both scores 1); the case's composite is the mean of the two;
- the figures are the means over cases of kidney, tumour and composite; `mean` (the composite) is
  the accuracy metric, 0.86170 for the reference model; targets 99% and 99.9% of it.

Counts are integers here where the reference sums one-hot float64 arrays: the same numbers (a sum of
0s and 1s is exact in float64 up to 2^53 voxels). Where the reference stops with an assertion, this
says one line: a response of the wrong size, a label above 2, a case index outside the set. Two
departures, both for logs that the reference refuses outright: a case logged twice counts once,
with its last response, and a log that lacks some cases is scored over the cases it has (the
result then says so and meets no target; an accuracy run must cover all 43).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.datasets.kits19.store import KitsPreprocessed, load_preprocessed
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log
from mlperf_harness.run_files import ACCURACY_TXT

# MLPerf's reference mean DICE for 3D-UNet on KiTS19; targets are 99% and 99.9% of it.
REFERENCE_DICE = 0.86170
KIDNEY, TUMOUR = 1, 2
LABELS = 3  # background, kidney, tumour
_SMOOTH_NUMERATOR = 1e-6
_SMOOTH_DENOMINATOR = 1e-6


@dataclass(frozen=True)
class CaseDice:
    case: str
    kidney: float
    tumour: float

    @property
    def composite(self) -> float:
        # np.mean of the pair, as the reference's summary takes it.
        return float(np.mean(np.array([self.kidney, self.tumour])))


@dataclass(frozen=True)
class KitsAccuracy:
    cases: tuple[CaseDice, ...]  # in sample order
    total_cases: int  # in the preprocessed set

    @property
    def complete(self) -> bool:
        return len(self.cases) == self.total_cases

    @property
    def mean(self) -> float:
        """The composite DICE averaged over cases: the accuracy metric."""
        return _mean([case.composite for case in self.cases])

    @property
    def kidney(self) -> float:
        return _mean([case.kidney for case in self.cases])

    @property
    def tumour(self) -> float:
        return _mean([case.tumour for case in self.cases])

    def line(self) -> str:
        """The line accuracy_kits.py prints, character for character (the submission checker
        reads `Accuracy: mean = ...` from accuracy.txt)."""
        return (
            f"Accuracy: mean = {self.mean:.5f}, kidney = {self.kidney:.4f}, "
            f"tumor = {self.tumour:.4f}"
        )

    def meets(self, fraction: float) -> bool:
        """Whether every case was scored and the mean reaches `fraction` of the reference's."""
        return self.complete and self.mean >= REFERENCE_DICE * fraction


def dice_scores(
    prediction: npt.NDArray[np.uint8], target: npt.NDArray[np.uint8]
) -> tuple[float, float]:
    """Kidney and tumour DICE of one case (arrays of the same shape)."""
    scores = []
    for label in (KIDNEY, TUMOUR):
        predicted = prediction == label
        wanted = target == label
        intersection = float(np.count_nonzero(predicted & wanted))
        total = float(np.count_nonzero(predicted)) + float(np.count_nonzero(wanted))
        scores.append((2.0 * intersection + _SMOOTH_NUMERATOR) / (total + _SMOOTH_DENOMINATOR))
    return scores[0], scores[1]


def read_predictions(
    accuracy_log: Path, dataset: KitsPreprocessed
) -> dict[int, npt.NDArray[np.uint8]]:
    """Each logged case's labels, [1, D, H, W] uint8, by sample index (the last of repeats)."""
    predictions: dict[int, npt.NDArray[np.uint8]] = {}
    for number, response in enumerate(read_accuracy_log(accuracy_log)):
        index = response.qsl_idx
        where = f"{accuracy_log}: response {number}"
        if not 0 <= index < len(dataset):
            raise HarnessError(
                f"{where} has qsl_idx {index}, outside the {len(dataset)} cases of "
                f"{dataset.directory} (a log of another data set?)"
            )
        shape = dataset.shape(index)
        where += f" ({dataset.cases[index]})"
        expected = int(np.prod(shape))
        if len(response.data) != expected:
            raise HarnessError(
                f"{where} holds {len(response.data)} bytes, not the {expected} uint8 labels of its "
                f"padded volume {list(shape)}"
            )
        labels = np.frombuffer(response.data, np.uint8).reshape(shape)
        highest = int(labels.max())
        if highest >= LABELS:
            raise HarnessError(
                f"{where} holds label {highest}: labels are 0 (background), 1 (kidney), 2 (tumour)"
            )
        predictions[index] = labels
    return predictions


def score_accuracy_log(accuracy_log: Path, dataset: KitsPreprocessed) -> KitsAccuracy:
    """DICE of every logged case against its preprocessed ground truth."""
    predictions = read_predictions(accuracy_log, dataset)
    cases = []
    for index in sorted(predictions):
        target = dataset.load_label(index)
        kidney, tumour = dice_scores(predictions[index][0], target)
        cases.append(CaseDice(dataset.cases[index], kidney, tumour))
    return KitsAccuracy(tuple(cases), len(dataset))


def write_accuracy_txt(log_dir: Path, accuracy: KitsAccuracy) -> Path:
    path = log_dir / ACCURACY_TXT
    write_bytes_atomic(path, (accuracy.line() + "\n").encode())
    return path


def _mean(values: list[float]) -> float:
    # pandas' DataFrame.mean over the summary's column: NumPy's pairwise sum over the count.
    return float(np.mean(np.array(values, dtype=np.float64))) if values else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    """Mean DICE (kidney, tumour) of a 3D-UNet accuracy run's mlperf_log_accuracy.json."""
    parser = OneLineParser(prog="accuracy_kits19", description=main.__doc__)
    parser.add_argument("--mlperf_accuracy_file", type=Path, required=True)
    parser.add_argument(
        "--preprocessed_dir",
        type=Path,
        required=True,
        help="the run's preprocessed KiTS19 set (preprocessed_files.pkl, nifti/, manifest.json)",
    )
    parser.add_argument("--log_dir", type=Path, help=f"also write {ACCURACY_TXT} there")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        accuracy = score_accuracy_log(
            args.mlperf_accuracy_file, load_preprocessed(args.preprocessed_dir)
        )
        if not accuracy.complete:
            print(
                f"accuracy_kits19: {accuracy.total_cases - len(accuracy.cases)} of "
                f"{accuracy.total_cases} cases have no response in the log; the figures are over "
                f"the {len(accuracy.cases)} that do",
                file=sys.stderr,
            )
        if args.log_dir is not None:
            write_accuracy_txt(args.log_dir, accuracy)
        print(accuracy.line())
        return 0

    return run_entry_point(parser.prog, run)


if __name__ == "__main__":
    raise SystemExit(main())
