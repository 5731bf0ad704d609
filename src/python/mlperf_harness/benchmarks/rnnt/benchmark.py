"""RNN-T on LibriSpeech dev-clean: the MLPerf speech recognition benchmark, last in round v4.0 (a run
is for v4.0 unless --round says otherwise). A sample is one utterance's log-mel features (features.py,
preprocessed before the run); its response is its greedy transcript as int64 symbol ids (ids 0..27 of
the 28 labels), as long as the transcript: the layout MLCommons' accuracy_eval.py reads."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.librispeech_wer import score_accuracy_log, write_accuracy_txt
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.rnnt import configs, resources
from mlperf_harness.benchmarks.rnnt.real_size import RealSizeStandIn, find_real_size
from mlperf_harness.benchmarks.rnnt.runners import response_rows, rnnt_runners
from mlperf_harness.benchmarks.rnnt.utterance_store import UtteranceStore
from mlperf_harness.benchmarks.spec import AccuracyReport, Benchmark, PreparedRun, counted_samples
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.librispeech.manifest import MANIFEST_FILE
from mlperf_harness.datasets.librispeech.preprocess import (
    load_preprocessed,
    preprocess_librispeech,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sut import SizedRows
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 2513  # mlperf.conf's rnnt performance_sample_count_override
LAST_ROUND = "v4.0"  # the newest round whose checker lists rnnt
_RULES = model_rules(configs.NAME, LAST_ROUND)


def _sized(outputs: npt.NDArray[np.generic], indices: Sequence[int]) -> SizedRows:
    rows, sizes = response_rows(outputs)
    return SizedRows(rows, sizes)


class Rnnt(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = _RULES.accuracy_log_sampling_target
    response_dtype = "int64"  # symbol ids, as accuracy_eval.py's default --output_dtype
    input_data_type = "fp32"

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        backend = settings.backend or configs.Rnnt.backend
        if backend not in ("onnxruntime", "torch", "null"):
            raise HarnessError(
                f"{configs.NAME} runs on onnxruntime (CPU) or torch (GPU), not --backend {backend}"
            )
        if backend == "torch" and settings.precision not in (None, "fp16"):
            raise HarnessError(
                f"RNN-T's torch engine runs in fp16 (torch_engine.py), not --precision "
                f"{settings.precision}"
            )
        scratch = options.scratch_path
        model = resources.choose_model(options.model_path, scratch, backend)
        if model.real_size is not None:
            return self._prepare_real_size(model, model.real_size, options)
        data = resources.choose_data(options.data_dir, scratch, model)
        preprocessed_dir = _preprocess(options, data)
        utterances = load_preprocessed(preprocessed_dir)
        if len(utterances) != len(data.dataset):
            raise HarnessError(
                f"{preprocessed_dir} holds {len(utterances)} utterances, the manifest "
                f"{len(data.dataset)}: run preprocess_data again"
            )
        total = counted_samples(options, len(utterances), f"utterances of {data.origin}")
        stand_in = model.stand_in or data.generated or not data.dataset.is_full
        if stand_in:
            print(f"rnnt: {model.origin}; {data.origin}", file=sys.stderr)
        return PreparedRun(
            store=UtteranceStore(utterances, total, PERFORMANCE_SAMPLE_COUNT),
            backend_options=BackendOptions(model_path=model.path, runner_factory=rnnt_runners),
            stand_in=stand_in,
            model_sha256=model.sha256,
            reference_accuracy=model.reference_accuracy,
            accuracy_fraction=_RULES.accuracy_fraction,
            provenance={
                "model": model.origin,
                "data": data.origin,
                "manifest": str(data.dataset.manifest),
                "preprocessed": str(preprocessed_dir),
            },
            sized_postprocess=_sized,
        )

    def _prepare_real_size(
        self, model: resources.ModelChoice, real: RealSizeStandIn, options: RunOptions
    ) -> PreparedRun:
        if options.test_mode.checks_accuracy or options.audit_test is not None:
            raise HarnessError(
                f"{model.path} is the real-size stand-in (random weights, forced emissions): it "
                "is for timing, it has no accuracy and no audits"
            )
        utterances = real.utterances()
        total = counted_samples(options, len(utterances), "utterances of the real-size stand-in")
        print(f"rnnt: {model.origin}: {real.describe()}", file=sys.stderr)
        return PreparedRun(
            store=UtteranceStore(utterances, total, PERFORMANCE_SAMPLE_COUNT),
            backend_options=BackendOptions(model_path=model.path, runner_factory=rnnt_runners),
            stand_in=True,
            model_sha256=model.sha256,
            provenance={"model": model.origin, "data": real.describe()},
            sized_postprocess=_sized,
        )

    def expects_stand_in(self, options: RunOptions) -> bool:
        model = options.model_path or resources.default_model_path(options.scratch_path)
        return not model.exists() or find_real_size(model) is not None

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        scratch = options.scratch_path
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        return (data_dir / MANIFEST_FILE,)

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        transcripts = load_preprocessed(Path(prepared.provenance["preprocessed"])).transcripts
        result = score_accuracy_log(log_dir / ACCURACY_FILE, transcripts)
        write_accuracy_txt(log_dir, result)
        reference = prepared.reference_accuracy
        fraction = prepared.accuracy_fraction or _RULES.accuracy_fraction
        target = None if reference is None else reference * fraction
        accuracy = 100.0 * (1.0 - result.wer)
        complete = result.samples == prepared.store.total_count
        passed = target is not None and complete and accuracy >= target
        record = {
            "wer_percent": round(100.0 * result.wer, 4),
            "accuracy_percent": round(accuracy, 4),
            "word_errors": result.errors,
            "words": result.words,
            "samples": result.samples,
            "total_samples": prepared.store.total_count,
            "reference_accuracy_percent": reference,
            "target_fraction": fraction,
            "target_accuracy_percent": None if target is None else round(target, 4),
            "passed": passed,
        }
        return AccuracyReport(result.line(), record, passed)

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        model = resources.choose_model(options.model_path, options.scratch_path, "null")
        data = resources.choose_data(options.data_dir, options.scratch_path, model)
        transcripts = load_preprocessed(_preprocess(options, data)).transcripts
        return 100.0 * (1.0 - score_accuracy_log(accuracy_log, transcripts).wer)


def _preprocess(options: RunOptions, data: resources.DataChoice) -> Path:
    """The run's features: --preprocessed_dir, else the stand-in's own, else one directory per
    data directory; brought up to date (only read when it is)."""
    if options.preprocessed_dir is None and data.preprocessed is not None:
        return data.preprocessed
    directory = options.preprocessed_dir or resources.default_preprocessed_dir(
        options.scratch_path, data.dataset.data_dir
    )
    preprocess_librispeech(data.dataset, directory, progress=False)
    return directory


BENCHMARK = Rnnt()
