"""BERT-Large on SQuAD v1.1: the MLPerf question-answering benchmark (BERT-99, and BERT-99.9 with
--config_ver high_accuracy)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.squad import score_accuracy_log, write_accuracy_txt
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.bert import configs, resources
from mlperf_harness.benchmarks.bert.calibration import choose_calibration
from mlperf_harness.benchmarks.bert.engines import bert_engine
from mlperf_harness.benchmarks.bert.gpu_engines import LENGTH_BUCKETS
from mlperf_harness.benchmarks.bert.stand_in_model import OUTPUT_NAMES
from mlperf_harness.benchmarks.spec import AccuracyReport, Benchmark, PreparedRun, counted_samples
from mlperf_harness.cli.options import DEFAULT_CONFIG_VER, HIGH_ACCURACY, RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.squad.features import SquadFeatures
from mlperf_harness.datasets.squad.store import load_preprocessed, preprocess_squad
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 10_833  # mlperf.conf's value for bert: every feature of the dev set
# Each response: the start and end logits of the feature's real tokens (its input_mask ones), as
# [tokens, 2] pairs in the run's --output_dtype; NVIDIA logs the same.
DEFAULT_OUTPUT_DTYPE = "float32"
INT8_PRECISION = "int8"  # on the CPU: quantized for bert-99 only, it cannot keep 99.9% of F1

_RULES = model_rules("bert-99")


class Bert(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    # --config_ver: BERT-99 by default, BERT-99.9 as NVIDIA's "high_accuracy".
    submission_models = MappingProxyType(
        {DEFAULT_CONFIG_VER: "bert-99", HIGH_ACCURACY: "bert-99.9"}
    )
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = _RULES.accuracy_log_sampling_target
    response_dtype = DEFAULT_OUTPUT_DTYPE
    input_data_type = "int32"  # token ids, mask and segment ids

    def response_dtype_for(self, options: RunOptions) -> str:
        return options.output_dtype or DEFAULT_OUTPUT_DTYPE

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        rules = self.rules_for(options)
        precision = settings.precision or configs.Bert.precision
        if options.config_ver == HIGH_ACCURACY and precision == INT8_PRECISION:
            raise HarnessError(
                f"{rules.model} (--config_ver {HIGH_ACCURACY}) must keep 99.9% of fp32's F1: "
                f"int8 on the CPU does not; run it with --precision fp32"
            )
        scratch = options.scratch_path
        model = resources.choose_model(options.model_path, scratch)
        data = resources.choose_data(options.data_dir, scratch, model)
        preprocessed_dir = _preprocessed_dir(options, model, data)
        preprocess_squad(data.squad_json, model.vocab, preprocessed_dir)
        dataset = load_preprocessed(preprocessed_dir)
        features = dataset.features
        total = len(features)
        total = counted_samples(options, total, f"features of {data.origin}")
        backend = settings.backend or configs.Bert.backend
        calibration = (
            choose_calibration(model, data, features, scratch)
            if precision == INT8_PRECISION and backend == "onnxruntime"
            else None
        )
        engine, _built = bert_engine(
            backend, precision, model, options.engine_dir or scratch / "engines", calibration
        )
        # One row per feature: ids, mask and segment ids side by side (BackendOptions.packed_inputs).
        packed = np.concatenate(
            [features.input_ids, features.input_mask, features.segment_ids], axis=1
        ).astype(np.int32, copy=False)
        dtype = self.response_dtype_for(options)
        stand_in = model.stand_in or data.generated or not dataset.is_full_dev_set
        if stand_in:
            print(f"bert: {model.origin}; {data.origin}", file=sys.stderr)
        return PreparedRun(
            store=PreloadedSampleStore(
                lambda indices: packed[np.asarray(indices, dtype=np.int64)],
                total,
                PERFORMANCE_SAMPLE_COUNT,
            ),
            backend_options=BackendOptions(
                model_path=engine,
                packed_inputs=model.input_names,
                stacked_outputs=OUTPUT_NAMES,
                length_buckets=LENGTH_BUCKETS if settings.backend == "torch" else (),
            ),
            stand_in=stand_in,
            model_sha256=model.sha256,
            reference_accuracy=model.reference_f1,
            provenance={
                "model": model.origin,
                "vocab": str(model.vocab),
                "data": data.origin,
                "preprocessed": str(preprocessed_dir),
                "engine": str(engine),
                # What int8 calibration saw, for the submission's documentation/calibration.md.
                **({"calibration": calibration.description} if calibration else {}),
            },
            accuracy_fraction=rules.accuracy_fraction,
            postprocess=functools.partial(logits_rows, dtype=dtype),
            response_bytes=real_length_bytes(features, dtype),
            response_dtype=dtype,
        )

    def expects_stand_in(self, options: RunOptions) -> bool:
        # prepare's choice, from what is on disk: only the official model on the full dev set
        # runs the official durations (a partial dev set is known only once it is read).
        scratch = options.scratch_path
        model = options.model_path or resources.default_model_path(scratch)
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        return not (model.is_file() and (data_dir / resources.SQUAD_FILE_NAME).is_file())

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        scratch = options.scratch_path
        model = options.model_path or resources.default_model_path(scratch)
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        return (
            model,
            model.parent / resources.VOCAB_FILE_NAME,
            data_dir / resources.SQUAD_FILE_NAME,
        )

    def postprocess(self, outputs: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        return logits_rows(outputs, DEFAULT_OUTPUT_DTYPE)

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        dataset = load_preprocessed(Path(prepared.provenance["preprocessed"]))
        dtype = prepared.response_dtype or DEFAULT_OUTPUT_DTYPE
        accuracy = score_accuracy_log(log_dir / ACCURACY_FILE, dataset, dtype)
        write_accuracy_txt(log_dir, accuracy)
        reference = prepared.reference_accuracy
        fraction = prepared.accuracy_fraction or _RULES.accuracy_fraction
        target = None if reference is None else reference * fraction
        passed = target is not None and accuracy.f1 >= target
        record = {
            "exact_match": round(accuracy.exact_match, 3),
            "f1": round(accuracy.f1, 3),
            "questions": accuracy.questions,
            "answered": accuracy.answered,
            "reference_f1": reference,
            "target_fraction": fraction,
            "target_f1": None if target is None else round(target, 3),
            "passed": passed,
        }
        return AccuracyReport(accuracy.line(), record, passed)

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        model = resources.choose_model(options.model_path, options.scratch_path)
        data = resources.choose_data(options.data_dir, options.scratch_path, model)
        dataset = load_preprocessed(_preprocessed_dir(options, model, data))
        return score_accuracy_log(accuracy_log, dataset, self.response_dtype_for(options)).f1


def logits_rows(outputs: npt.NDArray[np.generic], dtype: str) -> npt.NDArray[np.generic]:
    """[N, 384, 2] start and end logits -> one row of 768 values per feature in `dtype`, token
    by token: the first 2 x length values are the feature's first `length` tokens."""
    return np.ascontiguousarray(outputs.reshape(len(outputs), -1), dtype=dtype)


def real_length_bytes(features: SquadFeatures, dtype: str) -> npt.NDArray[np.int64]:
    """Per feature, the bytes of its logged row: the logits of its real tokens only."""
    lengths: npt.NDArray[np.int64] = features.input_mask.sum(axis=1, dtype=np.int64)
    return lengths * (2 * np.dtype(dtype).itemsize)


def _preprocessed_dir(
    options: RunOptions, model: resources.ModelChoice, data: resources.DataChoice
) -> Path:
    """Where the run's features are: --preprocessed_dir, else one directory per (questions, vocab)."""
    return options.preprocessed_dir or resources.default_preprocessed_dir(
        options.scratch_path, data.squad_json, model.vocab
    )


BENCHMARK = Bert()
