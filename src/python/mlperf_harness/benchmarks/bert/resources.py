"""Find BERT's model, vocabulary and SQuAD file, or fall back to the embedded stand-in.

The official model and vocab.txt sit together (`--model_path`, default under the scratch path);
`dev-v1.1.json` is in the data directory. Without a model the stand-in is built and runs on its own
generated questions: its vocabulary is its own, so real questions would mean nothing to it. The
official model without SQuAD runs on the stand-in's questions (for timing). Anything but the
official model on the full dev set is marked stand-in (not a valid MLPerf result).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx

from mlperf_harness.accuracy.squad import REFERENCE_F1
from mlperf_harness.benchmarks.bert import stand_in
from mlperf_harness.benchmarks.bert.stand_in_model import INPUT_NAMES, OUTPUT_NAMES
from mlperf_harness.benchmarks.preprocessed_dirs import keyed_preprocessed_dir
from mlperf_harness.datasets.model_file import read_model_header
from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_sha256

MODEL_FILE_NAME = "model.onnx"
VOCAB_FILE_NAME = "vocab.txt"
SQUAD_FILE_NAME = "dev-v1.1.json"
# The official int8 model (bert_large_v1_1_fake_quant.onnx) names two of its inputs otherwise.
INT8_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class ModelChoice:
    path: Path
    vocab: Path
    sha256: str
    stand_in: bool
    reference_f1: float  # the F1 that 99% (99.9%) is judged against
    input_names: tuple[str, str, str]  # ids, mask, segments: the model's names for them
    origin: str


@dataclass(frozen=True)
class DataChoice:
    squad_json: Path
    generated: bool
    origin: str


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "bert" / MODEL_FILE_NAME


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "squad"


def default_preprocessed_dir(scratch: Path, squad_json: Path, vocab: Path) -> Path:
    # One directory per (questions, vocabulary): two models' tokenizations never share outputs.
    made_from = [squad_json.resolve(), vocab.resolve()]
    return keyed_preprocessed_dir(scratch, "squad", squad_json.stem, made_from)


def choose_model(model_path: Path | None, scratch: Path) -> ModelChoice:
    path = model_path or default_model_path(scratch)
    if model_path is None and not path.is_file():
        built = stand_in.ensure_stand_in(scratch)
        return ModelChoice(
            path=built.model,
            vocab=built.vocab,
            sha256=built.record.sha256,
            stand_in=True,
            reference_f1=built.record.heldout_f1,
            input_names=INPUT_NAMES,
            origin=f"stand-in model ({built.record.shape}, held-out F1 "
            f"{built.record.heldout_f1:.2f})",
        )
    if not path.is_file():
        raise HarnessError(f"model not found: {path}")
    vocab = path.parent / VOCAB_FILE_NAME
    if not vocab.is_file():
        raise HarnessError(
            f"no {VOCAB_FILE_NAME} beside {path}: BERT's vocabulary comes with its model"
        )
    model = read_model_header(path)  # once: the official model is 1.3 GB
    return ModelChoice(
        path=path,
        vocab=vocab,
        sha256=file_sha256(path),
        stand_in=stand_in.is_stand_in_model(model),
        reference_f1=REFERENCE_F1,
        input_names=model_input_names(model, path),
        origin=str(path),
    )


def model_input_names(model: onnx.ModelProto, path: Path) -> tuple[str, str, str]:
    """The model's names for token ids, mask and segment ids: the fp32 model's or the int8 one's."""
    graph = model.graph
    names = {node.name for node in graph.input}
    for known in (INPUT_NAMES, INT8_INPUT_NAMES):
        if names >= set(known):
            return known
    outputs = {node.name for node in graph.output}
    missing = sorted(set(OUTPUT_NAMES) - outputs)
    raise HarnessError(
        f"{path} is not BERT's interface: inputs {', '.join(sorted(names))}; expected "
        f"{', '.join(INPUT_NAMES)} (or {', '.join(INT8_INPUT_NAMES)})"
        + (f", and it lacks outputs {', '.join(missing)}" if missing else "")
    )


def choose_data(data_dir: Path | None, scratch: Path, model: ModelChoice) -> DataChoice:
    directory = data_dir or default_data_dir(scratch)
    squad_json = directory / SQUAD_FILE_NAME
    if squad_json.is_file() and not (model.stand_in and data_dir is None):
        return DataChoice(squad_json, generated=False, origin=str(squad_json))
    if data_dir is not None:
        raise HarnessError(f"no {SQUAD_FILE_NAME} in {data_dir}")
    built = stand_in.ensure_stand_in(scratch)
    return DataChoice(
        built.dev_json, generated=True, origin=f"generated SQuAD questions ({built.dev_json})"
    )
