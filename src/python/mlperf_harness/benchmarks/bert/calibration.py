"""What BERT's int8 calibration sees: SQuAD features, as the model's three named inputs.

MLPerf's BERT calibration set is 100 features of the dev set, named by index in
`calibration/SQuAD-v1.1/bert_calibration_features.txt` of the MLCommons inference repository; it
is read from beside `dev-v1.1.json`. The stand-in calibrates on the first features of its own
generated training questions, never on the questions it is scored on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.bert import resources, stand_in
from mlperf_harness.benchmarks.bert.stand_in_model import INPUT_NAMES
from mlperf_harness.datasets.squad.features import SquadFeatures
from mlperf_harness.datasets.squad.store import load_preprocessed, preprocess_squad
from mlperf_harness.engines.calibration import Feed
from mlperf_harness.errors import HarnessError

CALIBRATION_LIST = "bert_calibration_features.txt"
STAND_IN_CALIBRATION_FEATURES = 100  # as many as MLPerf's list names


@dataclass(frozen=True)
class SquadCalibration:
    """Features of a preprocessed SQuAD set, by index (engines.calibration.Calibration)."""

    features: SquadFeatures
    indices: tuple[int, ...]
    description: str

    @property
    def sha256(self) -> str:
        """The model inputs of every chosen feature, in order: a changed list, tokenizer or
        vocabulary changes the calibration."""
        digest = hashlib.sha256()
        rows = np.asarray(self.indices, dtype=np.int64)
        for array in self._inputs():
            digest.update(np.ascontiguousarray(array[rows], dtype="<i4").tobytes())
        return digest.hexdigest()

    def feeds(self, batch_size: int, input_names: Sequence[str]) -> list[Feed]:
        by_name = dict(zip(INPUT_NAMES, self._inputs(), strict=True))
        by_name |= dict(zip(resources.INT8_INPUT_NAMES, self._inputs(), strict=True))
        unknown = [name for name in input_names if name not in by_name]
        if unknown:
            raise HarnessError(f"BERT calibration has no input named {', '.join(unknown)}")
        feeds: list[Feed] = []
        for start in range(0, len(self.indices), batch_size):
            rows = np.asarray(self.indices[start : start + batch_size], dtype=np.int64)
            feeds.append({name: by_name[name][rows].astype(np.int64) for name in input_names})
        return feeds

    def _inputs(self) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]:
        features = self.features
        return features.input_ids, features.input_mask, features.segment_ids


def choose_calibration(
    model: resources.ModelChoice,
    data: resources.DataChoice,
    dev_features: SquadFeatures,
    scratch: Path,
) -> SquadCalibration:
    """MLPerf's list over the run's dev features; for a stand-in model or generated questions,
    the stand-in's generated training questions."""
    if model.stand_in or data.generated:
        return _stand_in_calibration(model, scratch)
    list_file = data.squad_json.parent / CALIBRATION_LIST
    if not list_file.is_file():
        raise HarnessError(
            f"int8 needs MLPerf's BERT calibration list {CALIBRATION_LIST} (calibration/"
            f"SQuAD-v1.1/ in the MLCommons inference repository) in {list_file.parent}"
        )
    indices = read_feature_list(list_file, len(dev_features))
    return SquadCalibration(
        dev_features, indices, f"MLPerf's calibration list {list_file.name} (SQuAD dev features)"
    )


def read_feature_list(list_file: Path, feature_count: int) -> tuple[int, ...]:
    """Feature indices, one a line, each within the set's `feature_count` features."""
    indices: list[int] = []
    for number, line in enumerate(list_file.read_text().splitlines(), start=1):
        text = line.strip()
        if not text:
            continue
        if not text.isdigit() or int(text) >= feature_count:
            raise HarnessError(
                f"{list_file}: line {number} ({text!r}) is not a feature index below "
                f"{feature_count}"
            )
        indices.append(int(text))
    if not indices:
        raise HarnessError(f"{list_file} names no calibration features")
    return tuple(indices)


def _stand_in_calibration(model: resources.ModelChoice, scratch: Path) -> SquadCalibration:
    built = stand_in.ensure_stand_in(scratch)
    directory = resources.default_preprocessed_dir(scratch, built.train_json, model.vocab)
    preprocess_squad(built.train_json, model.vocab, directory, progress=False)
    features = load_preprocessed(directory).features
    count = min(STAND_IN_CALIBRATION_FEATURES, len(features))
    return SquadCalibration(
        features,
        tuple(range(count)),
        f"the stand-in's generated training questions ({count} features)",
    )
