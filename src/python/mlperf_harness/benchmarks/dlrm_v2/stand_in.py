"""DLRM-v2's embedded default: generated click logs (stand_in_data.py) made multi-hot as real rows
are, a LoadGen sample set of user groups, and a DLRM-DCNv2 of the real topology at 1/16 width with
tables of at most 2,048 rows, fitted to separate generated training rows with numpy (fit_dcn.py) and
written as ONNX; built once per scratch path (well under a minute of fitting on a 2-core CPU) and
kept with a record of its held-out AUC, measured over every pair of the sample set (which the fit
never saw). Everything it makes is marked "stand-in: not a valid MLPerf result".

`pants run benchmarks/dlrm-v2:stand_in` builds it on its own and prints what it measured.
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
import onnx
import onnxruntime as ort

from mlperf_harness.accuracy.dlrm_auc import roc_auc
from mlperf_harness.atomic import remove_stale_temporaries, write_bytes_atomic, write_json_atomic
from mlperf_harness.benchmarks.dlrm_v2 import stand_in_data
from mlperf_harness.benchmarks.dlrm_v2.dcn_weights import initial_weights
from mlperf_harness.benchmarks.dlrm_v2.fit_dcn import DcnModel, FitSettings
from mlperf_harness.benchmarks.dlrm_v2.stand_in_data import STAND_IN_ROWS, RawRows
from mlperf_harness.benchmarks.dlrm_v2.stand_in_model import (
    DENSE_INPUT,
    OUTPUT_NAME,
    SPARSE_INPUT,
    dcn_model,
)
from mlperf_harness.benchmarks.dlrm_v2.topology import REAL, Widths
from mlperf_harness.benchmarks.stand_in_cli import run_stand_in, stand_in_parser
from mlperf_harness.datasets.criteo.store import (
    CriteoPreprocessed,
    load_preprocessed,
    write_preprocessed,
)
from mlperf_harness.datasets.criteo.transform import dense_features, multi_hot_bags
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256
from mlperf_harness.records import read_record
from mlperf_harness.scratch_lock import build_once

SEED = 0
WIDTH_DIVISOR = 16
WIDTHS: Widths = REAL.reduced(WIDTH_DIVISOR)
TRAINING_PAIRS = 300_000
SAMPLES = 256  # user groups: about 69,000 pairs
FIT = FitSettings(epochs=2, seed=SEED)
REQUIRED_AUC = 0.7  # held out, over every pair; chance is 0.5
MODEL_FILE_NAME = "dlrm_v2_stand_in.onnx"
RECORD_FILE_NAME = "stand_in.json"
PREPROCESSED_DIR = "preprocessed"
NOT_VALID = "stand-in: not a valid MLPerf result"
ACTIVITY = "building the DLRM-v2 stand-in"
STAND_IN_MARK = "mlperf_harness.dlrm_v2_stand_in"
# The rows of each table, in the model's metadata: a dataset is checked against them before a run.
TABLE_ROWS_KEY = "mlperf_harness.dlrm_v2_table_rows"


@dataclass(frozen=True)
class StandInRecord:
    sha256: str
    seed: int
    width_divisor: int
    embedding_width: int
    max_table_rows: int
    heldout_auc: float
    heldout_pairs: int
    samples: int
    training_pairs: int
    training_click_rate: float
    fit_steps: int
    build_seconds: float
    note: str = NOT_VALID


@dataclass(frozen=True)
class BuiltStandIn:
    model: Path
    preprocessed: Path
    record: StandInRecord


def stand_in_dir(scratch: Path) -> Path:
    return scratch / "stand_in" / "dlrm_v2" / f"w{WIDTH_DIVISOR}-seed{SEED}"


def is_stand_in_model(model: onnx.ModelProto) -> bool:
    return any(entry.key == STAND_IN_MARK for entry in model.metadata_props)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def features(rows: RawRows) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int32]]:
    """(dense, sparse) of raw rows, as preprocess_data makes them from a day file."""
    counts = np.where(rows.counts == -1, 0, rows.counts)  # -1 marks a missing count: 0
    return dense_features(counts), multi_hot_bags(rows.categorical, STAND_IN_ROWS)


def ensure_stand_in(scratch: Path) -> BuiltStandIn:
    """The stand-in's files, built when absent; runs sharing a scratch build it once."""
    work_dir = stand_in_dir(scratch)
    model_path = work_dir / MODEL_FILE_NAME
    record_path = work_dir / RECORD_FILE_NAME

    def find() -> BuiltStandIn | None:
        record = read_record(StandInRecord, record_path) if model_path.is_file() else None
        if record is None or record.sha256 != file_sha256(model_path):
            return None
        try:
            load_preprocessed(work_dir / PREPROCESSED_DIR)
        except HarnessError:
            return None
        return BuiltStandIn(model_path, work_dir / PREPROCESSED_DIR, record)

    def build() -> BuiltStandIn:
        remove_stale_temporaries([work_dir])
        _say(
            "dlrm-v2: no model given; building the stand-in (generated click logs made multi-hot "
            f"and a DLRM-DCNv2 at 1/{WIDTH_DIVISOR} width fitted to them, about a minute) in "
            f"{work_dir}"
        )
        record = _build(work_dir, model_path)
        write_json_atomic(record_path, dataclasses.asdict(record))
        return BuiltStandIn(model_path, work_dir / PREPROCESSED_DIR, record)

    return build_once(work_dir, ACTIVITY, find, build)


def heldout_auc(model: bytes, dataset: CriteoPreprocessed) -> float:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    (probability,) = session.run(
        [OUTPUT_NAME],
        {DENSE_INPUT: np.asarray(dataset.dense), SPARSE_INPUT: np.asarray(dataset.sparse)},
    )
    return roc_auc(np.asarray(dataset.labels), np.asarray(probability))


def _build(work_dir: Path, model_path: Path) -> StandInRecord:
    started = time.perf_counter()
    clicks = stand_in_data.click_model(SEED)
    sizes = stand_in_data.group_sizes(SEED, SAMPLES)
    groups = stand_in_data.group_offsets(sizes)
    _say(f"dlrm-v2 stand-in: generating {SAMPLES} user groups ({int(groups[-1])} pairs)")
    heldout = stand_in_data.generate_rows(SEED, 1, int(groups[-1]), clicks)
    dense, sparse = features(heldout)
    dataset = write_preprocessed(
        work_dir / PREPROCESSED_DIR,
        dense,
        sparse,
        heldout.labels,
        groups,
        STAND_IN_ROWS,
        f"generated click logs (seed {SEED}, {SAMPLES} user groups)",
    )
    _say(f"dlrm-v2 stand-in: generating {TRAINING_PAIRS} training pairs and fitting the model")
    training = stand_in_data.generate_rows(SEED, 0, TRAINING_PAIRS, clicks)
    train_dense, train_sparse = features(training)
    model = DcnModel(initial_weights(WIDTHS, STAND_IN_ROWS, SEED), WIDTHS, STAND_IN_ROWS)
    report = model.fit(
        train_dense,
        train_sparse,
        training.labels,
        FIT,
        on_epoch=lambda epoch, loss: _say(f"  epoch {epoch + 1}/{FIT.epochs}: loss {loss:.4f}"),
    )
    doc = (
        "NOT the official MLPerf DLRM-v2: DLRM-DCNv2's topology at 1/"
        f"{WIDTH_DIVISOR} width with tables of at most {stand_in_data.MAX_ROWS} rows, fitted to "
        f"generated click logs (seed {SEED}); no valid MLPerf result."
    )
    metadata = {
        STAND_IN_MARK: NOT_VALID,
        "mlperf_harness.seed": str(SEED),
        TABLE_ROWS_KEY: ",".join(str(rows) for rows in STAND_IN_ROWS),
    }
    serialized: bytes = dcn_model(
        model.weights, WIDTHS, STAND_IN_ROWS, doc, metadata
    ).SerializeToString()
    auc = heldout_auc(serialized, dataset)
    _say(f"dlrm-v2 stand-in: held-out AUC {auc:.4f} over {dataset.manifest.pairs} pairs")
    if auc < REQUIRED_AUC:
        raise HarnessError(
            f"the DLRM-v2 stand-in reached only AUC {auc:.4f} on held-out pairs (needs "
            f"{REQUIRED_AUC}); report this as a bug"
        )
    write_bytes_atomic(model_path, serialized)
    return StandInRecord(
        sha256=file_sha256(model_path),
        seed=SEED,
        width_divisor=WIDTH_DIVISOR,
        embedding_width=WIDTHS.embedding,
        max_table_rows=stand_in_data.MAX_ROWS,
        heldout_auc=round(auc, 6),
        heldout_pairs=dataset.manifest.pairs,
        samples=SAMPLES,
        training_pairs=TRAINING_PAIRS,
        training_click_rate=round(float(training.labels.mean()), 4),
        fit_steps=report.steps,
        build_seconds=round(time.perf_counter() - started, 1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    def report(_args: argparse.Namespace, built: BuiltStandIn) -> None:
        print(f"model {built.model}\npreprocessed {built.preprocessed}")

    return run_stand_in(stand_in_parser("DLRM-v2"), argv, ensure_stand_in, report, NOT_VALID)


if __name__ == "__main__":
    sys.exit(main())
