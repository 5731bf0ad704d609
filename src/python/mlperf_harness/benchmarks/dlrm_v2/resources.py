"""Find DLRM-v2's model and preprocessed Criteo set, or fall back to the embedded stand-in.

- The model: an ONNX DLRM-DCNv2 of the stand-in's interface (inputs `dense`, `sparse`; output
  `probability`), by default the stand-in, built when absent. The official checkpoint is a
  torchsnapshot directory of 97 GB (MLCommons' `model_weights`, fetched with rclone: actions.py
  says how), by default under `<scratch>/models/dlrm-v2/model_weights`; this harness cannot read
  it yet, and says so in one line.
- The data: a preprocessed set (datasets/criteo/store.py), `--preprocessed_dir` or the default
  `<scratch>/preprocessed/dlrm_v2/day_23` that preprocess_data writes; without one, the stand-in's
  generated set. A set whose tables are larger than the model's is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.accuracy.dlrm_auc import REFERENCE_AUC
from mlperf_harness.benchmarks.dlrm_v2 import stand_in
from mlperf_harness.benchmarks.dlrm_v2.gpu_model import is_real_size_spec
from mlperf_harness.benchmarks.dlrm_v2.stand_in_data import STAND_IN_ROWS
from mlperf_harness.benchmarks.dlrm_v2.stand_in_model import DENSE_INPUT, OUTPUT_NAME, SPARSE_INPUT
from mlperf_harness.benchmarks.dlrm_v2.topology import TABLE_ROWS
from mlperf_harness.datasets.criteo.store import CriteoPreprocessed, load_preprocessed
from mlperf_harness.datasets.model_file import read_model_header
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

CHECKPOINT_DIR_NAME = "model_weights"  # the reference's checkpoint directory


@dataclass(frozen=True)
class ModelChoice:
    path: Path
    sha256: str
    stand_in: bool
    reference_auc: float  # the AUC that 99% (99.9%) is judged against
    table_rows: tuple[int, ...] | None  # each table's rows, where the model says
    origin: str


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "dlrm-v2" / CHECKPOINT_DIR_NAME


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "criteo"


def default_preprocessed_dir(scratch: Path) -> Path:
    return scratch / "preprocessed" / "dlrm_v2" / "day_23"


def choose_model(model_path: Path | None, scratch: Path) -> ModelChoice:
    path = model_path or default_model_path(scratch)
    if model_path is None and not path.exists():
        built = stand_in.ensure_stand_in(scratch)
        return ModelChoice(
            path=built.model,
            sha256=built.record.sha256,
            stand_in=True,
            reference_auc=built.record.heldout_auc,
            table_rows=STAND_IN_ROWS,
            origin=f"stand-in model (DLRM-DCNv2 at 1/{built.record.width_divisor} width, tables "
            f"of at most {built.record.max_table_rows} rows, held-out AUC "
            f"{built.record.heldout_auc:.4f})",
        )
    if is_real_size_spec(path):
        return ModelChoice(
            path=path,
            sha256=file_sha256(path),
            stand_in=True,
            reference_auc=REFERENCE_AUC,
            table_rows=TABLE_ROWS,
            origin=f"real-size stand-in {path} (the real tables and widths, seeded random "
            "weights: for timing on the torch backend, no accuracy)",
        )
    if path.is_dir():
        raise HarnessError(
            f"{path} is a directory (the official torchsnapshot checkpoint?): this harness runs "
            "DLRM-v2 from an ONNX model of its stand-in's interface and cannot read the official "
            "checkpoint yet; give --model_path <model.onnx>"
        )
    if not path.is_file():
        raise HarnessError(f"model not found: {path}")
    model = read_model_header(path)
    inputs = {node.name for node in model.graph.input}
    outputs = {node.name for node in model.graph.output}
    if not {DENSE_INPUT, SPARSE_INPUT} <= inputs or OUTPUT_NAME not in outputs:
        raise HarnessError(
            f"{path} is not DLRM-v2's interface: inputs {', '.join(sorted(inputs))}, outputs "
            f"{', '.join(sorted(outputs))}; expected inputs {DENSE_INPUT!r} and {SPARSE_INPUT!r} "
            f"and output {OUTPUT_NAME!r}"
        )
    metadata = {entry.key: entry.value for entry in model.metadata_props}
    rows = metadata.get(stand_in.TABLE_ROWS_KEY)
    is_stand_in = stand_in.is_stand_in_model(model)
    return ModelChoice(
        path=path,
        sha256=file_sha256(path),
        stand_in=is_stand_in,
        reference_auc=REFERENCE_AUC,
        table_rows=tuple(int(r) for r in rows.split(",")) if rows else None,
        origin=str(path),
    )


@dataclass(frozen=True)
class DataChoice:
    dataset: CriteoPreprocessed
    generated: bool
    origin: str


def choose_data(preprocessed_dir: Path | None, scratch: Path, model: ModelChoice) -> DataChoice:
    directory = preprocessed_dir or default_preprocessed_dir(scratch)
    if preprocessed_dir is not None or (not model.stand_in and directory.is_dir()):
        dataset = load_preprocessed(directory)  # one line when it is not a set
        generated = False
    else:
        dataset = load_preprocessed(stand_in.ensure_stand_in(scratch).preprocessed)
        generated = True
    if model.table_rows is not None:
        for table, (have, need) in enumerate(
            zip(model.table_rows, dataset.manifest.table_rows, strict=True)
        ):
            if need > have:
                raise HarnessError(
                    f"{dataset.directory} indexes table {table} up to {need} rows; the model "
                    f"{model.path} has {have}: a set preprocessed for another model"
                )
    origin = (
        f"generated click logs ({len(dataset)} user groups, {dataset.manifest.pairs} pairs)"
        if generated
        else f"{dataset.directory} ({len(dataset)} samples, {dataset.manifest.pairs} pairs)"
    )
    return DataChoice(dataset, generated, origin)
