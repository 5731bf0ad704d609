"""The KiTS19 scorer: DICE by hand on small arrays, and end to end on a preprocessed set of
generated NIfTI cases with accuracy logs written as LoadGen writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mlperf_harness.accuracy.kits19 import (
    REFERENCE_DICE,
    CaseDice,
    KitsAccuracy,
    dice_scores,
    main,
    score_accuracy_log,
)
from mlperf_harness.datasets.kits19.layout import write_raw_case
from mlperf_harness.datasets.kits19.preprocess import preprocess_dataset
from mlperf_harness.datasets.kits19.store import KitsPreprocessed, load_preprocessed
from mlperf_harness.errors import HarnessError

CASES = ["case_00003", "case_00005"]


def test_dice_by_hand() -> None:
    target = np.array([0, 1, 1, 1, 1, 2, 2, 0], np.uint8)
    prediction = np.array([1, 1, 1, 1, 0, 2, 0, 2], np.uint8)
    kidney, tumour = dice_scores(prediction, target)
    # kidney: 3 shared, 4 predicted, 4 wanted; tumour: 1 shared, 2 predicted, 2 wanted
    assert kidney == (2.0 * 3 + 1e-6) / (8 + 1e-6)
    assert tumour == (2.0 * 1 + 1e-6) / (4 + 1e-6)
    # A class absent from both scores 1; predicted where there is none, about 0.
    empty = np.zeros(5, np.uint8)
    assert dice_scores(empty, empty) == (1.0, 1.0)
    assert dice_scores(np.full(5, 2, np.uint8), empty) == (1.0, 1e-6 / (5 + 1e-6))


def test_line_and_targets() -> None:
    accuracy = KitsAccuracy(
        (CaseDice("case_00000", 0.9, 0.8), CaseDice("case_00003", 0.95, 0.7123456)), 2
    )
    assert accuracy.line() == "Accuracy: mean = 0.84059, kidney = 0.9250, tumor = 0.7562"
    at_99 = KitsAccuracy((CaseDice("a", REFERENCE_DICE * 0.99, REFERENCE_DICE * 0.99),), 1)
    assert at_99.meets(0.99) and not at_99.meets(0.999)
    assert not KitsAccuracy(at_99.cases, 43).meets(0.99)  # not every case scored


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> KitsPreprocessed:
    root = tmp_path_factory.mktemp("kits")
    for number, case in enumerate(CASES):
        shape = (24 + 8 * number, 50, 60)
        z, y, x = np.meshgrid(*(np.linspace(-1, 1, n) for n in shape), indexing="ij")
        label = np.zeros(shape, np.uint8)
        label[z**2 + (y - 0.2) ** 2 / 0.2 + (x - 0.3) ** 2 / 0.1 < 0.5] = 1
        label[z**2 + (y - 0.2) ** 2 / 0.05 + (x - 0.3) ** 2 / 0.03 < 0.3] = 2
        image = np.where(label > 0, 150.0, 40.0).astype(np.float32)
        affine = np.diag([-(3.0 + number), -1.0, -1.1, 1.0])
        write_raw_case(root / "raw" / case, image, label, affine)
    preprocess_dataset(root / "raw", root / "pre", cases=CASES, progress=False)
    return load_preprocessed(root / "pre")


def _write_log(path: Path, responses: list[tuple[int, npt.NDArray[Any]]]) -> Path:
    entries = [
        {"seq_id": n, "qsl_idx": index, "data": labels.astype(np.uint8).tobytes().hex()}
        for n, (index, labels) in enumerate(responses)
    ]
    path.write_text(json.dumps(entries))
    return path


def test_scores_a_log_against_the_preprocessed_ground_truth(
    dataset: KitsPreprocessed, tmp_path: Path
) -> None:
    truth = [dataset.load_case(i)[1] for i in range(2)]
    assert all(np.count_nonzero(t == 2) for t in truth)  # both classes in both cases
    missed_tumour = truth[1].copy()
    missed_tumour[missed_tumour == 2] = 1
    log = _write_log(tmp_path / "log.json", [(1, missed_tumour), (0, truth[0])])
    accuracy = score_accuracy_log(log, dataset)
    assert [case.case for case in accuracy.cases] == CASES and accuracy.complete
    assert (accuracy.cases[0].kidney, accuracy.cases[0].tumour) == (1.0, 1.0)
    kidney = int(np.count_nonzero(truth[1] == 1))
    tumour = int(np.count_nonzero(truth[1] == 2))
    assert accuracy.cases[1].kidney == (2.0 * kidney + 1e-6) / (2 * kidney + tumour + 1e-6)
    assert accuracy.cases[1].tumour == 1e-6 / (tumour + 1e-6)
    assert accuracy.mean == pytest.approx((1.0 + (accuracy.cases[1].kidney + 0.0) / 2) / 2)

    log_dir = tmp_path / "run"
    log_dir.mkdir()
    argv = ["--mlperf_accuracy_file", str(log), "--preprocessed_dir", str(dataset.directory)]
    assert main([*argv, "--log_dir", str(log_dir)]) == 0
    assert (log_dir / "accuracy.txt").read_text() == accuracy.line() + "\n"


def test_a_repeated_case_counts_once_and_a_missing_one_is_said(
    dataset: KitsPreprocessed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truth = dataset.load_case(0)[1]
    log = _write_log(tmp_path / "log.json", [(0, np.zeros_like(truth)), (0, truth)])
    accuracy = score_accuracy_log(log, dataset)
    assert len(accuracy.cases) == 1 and accuracy.mean == 1.0 and not accuracy.complete
    argv = ["--mlperf_accuracy_file", str(log), "--preprocessed_dir", str(dataset.directory)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == "Accuracy: mean = 1.00000, kidney = 1.0000, tumor = 1.0000\n"
    assert "1 of 2 cases have no response" in err


def test_bad_responses_are_one_line(dataset: KitsPreprocessed, tmp_path: Path) -> None:
    truth = dataset.load_case(0)[1]
    cases = {
        "holds 100 bytes, not the": [(0, truth.reshape(-1)[:100])],
        "holds label 3: labels are": [(0, np.full_like(truth, 3))],
        "has qsl_idx 2, outside the 2 cases": [(2, truth)],
    }
    for expected, responses in cases.items():
        log = _write_log(tmp_path / "log.json", responses)
        with pytest.raises(HarnessError, match=expected) as caught:
            score_accuracy_log(log, dataset)
        assert "\n" not in str(caught.value)
    argv = ["--mlperf_accuracy_file", str(log), "--preprocessed_dir", str(tmp_path / "none")]
    assert main(argv) == 2
