"""DLRM-v2 on Criteo 1TB made multi-hot: the MLPerf recommendation benchmark (DLRM-v2-99, and
DLRM-v2-99.9 with --config_ver high_accuracy), last in MLPerf v5.1: a run is for v5.1 unless
--round says otherwise. A sample is a user's group of user-item pairs; its response is its pairs'
(click probability, label) float32 pairs, the layout MLCommons' accuracy-dlrm.py reads."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from types import MappingProxyType

from mlperf_harness.accuracy.dlrm_auc import score_accuracy_log, write_accuracy_txt
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.dlrm_v2 import configs, resources
from mlperf_harness.benchmarks.dlrm_v2.gpu_model import is_real_size_spec
from mlperf_harness.benchmarks.dlrm_v2.pair_store import PairGroupStore
from mlperf_harness.benchmarks.dlrm_v2.runners import dlrm_runners
from mlperf_harness.benchmarks.dlrm_v2.stand_in_model import OUTPUT_NAME
from mlperf_harness.benchmarks.dlrm_v2.torch_plan import torch_plan
from mlperf_harness.benchmarks.spec import AccuracyReport, Benchmark, PreparedRun, counted_samples
from mlperf_harness.cli.options import DEFAULT_CONFIG_VER, HIGH_ACCURACY, RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rules import model_rules

ROUND = "v5.1"  # DLRM-v2's last round
PERFORMANCE_SAMPLE_COUNT = 204_800  # mlperf.conf's dlrm-v2 performance_sample_count_override
PAIR_BYTES = 8  # a response's (prediction, label) float32 pair

_RULES = model_rules("dlrm-v2-99", ROUND)


class DlrmV2(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    submission_models = MappingProxyType(
        {DEFAULT_CONFIG_VER: "dlrm-v2-99", HIGH_ACCURACY: "dlrm-v2-99.9"}
    )
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = _RULES.accuracy_log_sampling_target
    response_dtype = "float32"
    input_data_type = "fp32"  # the dense features; the sparse ones are int32 indices

    def variant_settings(
        self, config_ver: str, system: str, scenario: Scenario
    ) -> HarnessSettings | None:
        if config_ver == HIGH_ACCURACY:
            return configs.high_accuracy_settings(system, scenario)
        return None

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        rules = self.rules_for(options)
        backend = settings.backend or configs.DlrmV2.backend
        if backend not in ("onnxruntime", "torch", "null"):
            raise HarnessError(
                f"{configs.NAME} runs on onnxruntime (CPU) or torch (GPU), not --backend {backend}"
            )
        plan = torch_plan(settings) if backend == "torch" else None  # its settings refused here
        scratch = options.scratch_path
        model = resources.choose_model(options.model_path, scratch)
        if backend == "onnxruntime" and is_real_size_spec(model.path):
            raise HarnessError(
                f"{model.path} is the real-size DLRM-v2 (97 GB of tables): it runs on --backend "
                "torch only"
            )
        data = resources.choose_data(options.preprocessed_dir, scratch, model)
        dataset = data.dataset
        total = len(dataset)
        total = counted_samples(options, total, f"samples of {data.origin}")
        stand_in = model.stand_in or data.generated
        if stand_in:
            print(f"dlrm-v2: {model.origin}; {data.origin}", file=sys.stderr)
        store = PairGroupStore(dataset, total, PERFORMANCE_SAMPLE_COUNT)
        return PreparedRun(
            store=store,
            backend_options=BackendOptions(
                model_path=model.path,
                output_name=OUTPUT_NAME,
                runner_factory=functools.partial(
                    dlrm_runners,
                    max_pairs=store.max_pairs,
                    plan=plan,
                ),
            ),
            stand_in=stand_in,
            model_sha256=model.sha256,
            reference_accuracy=model.reference_auc,
            accuracy_fraction=rules.accuracy_fraction,
            provenance={
                "model": model.origin,
                "data": data.origin,
                "preprocessed": str(dataset.directory),
                **(plan.provenance() if plan is not None else {}),
            },
            response_bytes=None if backend == "null" else store.sizes * PAIR_BYTES,
        )

    def expects_stand_in(self, options: RunOptions) -> bool:
        model = options.model_path or resources.default_model_path(options.scratch_path)
        return not model.exists()

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        model = options.model_path or resources.default_model_path(options.scratch_path)
        return (model,) if model.is_file() else ()

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        accuracy = score_accuracy_log(log_dir / ACCURACY_FILE)
        write_accuracy_txt(log_dir, accuracy)
        reference = prepared.reference_accuracy
        fraction = prepared.accuracy_fraction or _RULES.accuracy_fraction
        target = None if reference is None else reference * fraction
        complete = accuracy.queries == prepared.store.total_count
        passed = target is not None and complete and accuracy.auc >= target
        record = {
            "auc": round(accuracy.auc, 6),
            "accuracy": round(accuracy.accuracy, 6),
            "pairs": accuracy.total,
            "samples": accuracy.queries,
            "total_samples": prepared.store.total_count,
            "reference_auc": reference,
            "target_fraction": fraction,
            "target_auc": None if target is None else round(target, 6),
            "passed": passed,
        }
        return AccuracyReport(accuracy.line(), record, passed)

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        return score_accuracy_log(accuracy_log).auc


BENCHMARK = DlrmV2()
