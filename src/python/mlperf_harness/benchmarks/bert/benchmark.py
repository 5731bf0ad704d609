"""BERT-Large on SQuAD v1.1: the MLPerf question-answering benchmark (BERT-99)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.squad import score_accuracy_log, write_accuracy_txt
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.bert import configs, resources
from mlperf_harness.benchmarks.bert.stand_in_model import OUTPUT_NAMES
from mlperf_harness.benchmarks.spec import AccuracyReport, Benchmark, PreparedRun
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.squad.store import load_preprocessed, preprocess_squad
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.submission.rules import model_rules

SUBMISSION_MODEL = "bert-99"
PERFORMANCE_SAMPLE_COUNT = 10_833  # mlperf.conf's value for bert: every feature of the dev set
# The stand-in's short run, as ResNet-50's: about a minute.
STAND_IN_SHORT_RUN = HarnessSettings(min_duration_ms=60_000, min_query_count=64)
STAND_IN_SOURCE = "stand-in short run"
LOGGED_DTYPE = "float32"  # each response: the feature's [384, 2] start and end logits

_RULES = model_rules(SUBMISSION_MODEL)


class Bert(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = _RULES.accuracy_log_sampling_target
    response_dtype = LOGGED_DTYPE

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        scratch = options.scratch_path
        model = resources.choose_model(options.model_path, scratch)
        data = resources.choose_data(options.data_dir, scratch, model)
        preprocessed_dir = _preprocessed_dir(options, model, data)
        preprocess_squad(data.squad_json, model.vocab, preprocessed_dir)
        dataset = load_preprocessed(preprocessed_dir)
        features = dataset.features
        total = len(features)
        if options.count is not None:
            if options.count > total:
                raise HarnessError(
                    f"--count {options.count} is more than the {total} features of "
                    f"{data.origin}; give at most {total}, or leave --count out"
                )
            total = options.count
        # One row per feature: ids, mask and segment ids side by side (BackendOptions.packed_inputs).
        packed = np.concatenate(
            [features.input_ids, features.input_mask, features.segment_ids], axis=1
        ).astype(np.int32, copy=False)
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
                model_path=model.path,
                packed_inputs=model.input_names,
                stacked_outputs=OUTPUT_NAMES,
            ),
            stand_in=stand_in,
            model_sha256=model.sha256,
            run_defaults=STAND_IN_SHORT_RUN if stand_in else None,
            run_defaults_source=STAND_IN_SOURCE,
            reference_accuracy=model.reference_f1,
            provenance={
                "model": model.origin,
                "vocab": str(model.vocab),
                "data": data.origin,
                "preprocessed": str(preprocessed_dir),
            },
        )

    def expected_run_defaults(self, options: RunOptions) -> tuple[HarnessSettings, str] | None:
        # prepare's choice, from what is on disk: only the official model on the full dev set
        # runs the official durations (a partial dev set is known only once it is read).
        scratch = options.scratch_path
        model = options.model_path or resources.default_model_path(scratch)
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        official = model.is_file() and (data_dir / resources.SQUAD_FILE_NAME).is_file()
        return None if official else (STAND_IN_SHORT_RUN, STAND_IN_SOURCE)

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
        # [N, 384, 2] start and end logits -> one row of 768 values per feature, as logged.
        return np.ascontiguousarray(outputs.reshape(len(outputs), -1), dtype=LOGGED_DTYPE)

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        dataset = load_preprocessed(Path(prepared.provenance["preprocessed"]))
        accuracy = score_accuracy_log(log_dir / ACCURACY_FILE, dataset, LOGGED_DTYPE)
        write_accuracy_txt(log_dir, accuracy)
        reference = prepared.reference_accuracy
        target = None if reference is None else reference * _RULES.accuracy_fraction
        passed = target is not None and accuracy.f1 >= target
        record = {
            "exact_match": round(accuracy.exact_match, 3),
            "f1": round(accuracy.f1, 3),
            "questions": accuracy.questions,
            "answered": accuracy.answered,
            "reference_f1": reference,
            "target_f1": None if target is None else round(target, 3),
            "passed": passed,
        }
        return AccuracyReport(accuracy.line(), record, passed)

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        model = resources.choose_model(options.model_path, options.scratch_path)
        data = resources.choose_data(options.data_dir, options.scratch_path, model)
        dataset = load_preprocessed(_preprocessed_dir(options, model, data))
        return score_accuracy_log(accuracy_log, dataset, LOGGED_DTYPE).f1


def _preprocessed_dir(
    options: RunOptions, model: resources.ModelChoice, data: resources.DataChoice
) -> Path:
    """Where the run's features are: --preprocessed_dir, else one directory per (questions, vocab)."""
    return options.preprocessed_dir or resources.default_preprocessed_dir(
        options.scratch_path, data.squad_json, model.vocab
    )


BENCHMARK = Bert()
