"""3D-UNet on KiTS19: the MLPerf medical-imaging benchmark (3D-UNet-99, and 3D-UNet-99.9 with
--config_ver high_accuracy). A sample is a whole preprocessed CT volume; its response is the uint8
segmentation of the whole padded volume, made from the model's overlapping 128³ windows
(window_runner.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import MappingProxyType

import numpy as np

from mlperf_harness.accuracy.kits19 import score_accuracy_log, write_accuracy_txt
from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.spec import AccuracyReport, Benchmark, PreparedRun, counted_samples
from mlperf_harness.benchmarks.unet3d import configs, resources
from mlperf_harness.benchmarks.unet3d.engines import unet3d_engines
from mlperf_harness.benchmarks.unet3d.stand_in_model import OUTPUT_NAME, WINDOW
from mlperf_harness.benchmarks.unet3d.window_runner import SlidingWindowRunner
from mlperf_harness.cli.options import DEFAULT_CONFIG_VER, HIGH_ACCURACY, RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.kits19.preprocess import preprocess_dataset
from mlperf_harness.datasets.kits19.store import KitsPreprocessed, load_preprocessed
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.volume_store import VolumeStore
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 43  # every inference case stays loaded (mlperf.conf: override 0)
CPU_WINDOW_BATCH = 2  # windows per model call on the CPU: ONNX Runtime gains nothing from more

_RULES = model_rules("3d-unet-99")


class Unet3d(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    submission_models = MappingProxyType(
        {DEFAULT_CONFIG_VER: "3d-unet-99", HIGH_ACCURACY: "3d-unet-99.9"}
    )
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = _RULES.accuracy_log_sampling_target
    response_dtype = "uint8"  # each voxel's label: 0 background, 1 kidney, 2 tumour
    input_data_type = "fp32"  # preprocessed CT volumes

    def stand_in_run(self, scenario: Scenario) -> HarnessSettings:
        # A handful of volumes at seconds each on a 2-core CPU: Offline's query holds at least
        # 8. The latency scenarios' runs end before LoadGen's early stopping has its queries
        # (SingleStream's 64 volumes are minutes here): only Offline is VALID by design.
        return HarnessSettings(min_duration_ms=20_000, min_query_count=8)

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        rules = self.rules_for(options)
        backend = settings.backend or configs.Unet3d.backend
        precision = settings.precision or configs.Unet3d.precision
        if backend not in ("onnxruntime", "torch", "null"):
            raise HarnessError(
                f"{configs.NAME} runs on onnxruntime (CPU) or torch (GPU), not --backend {backend}"
            )
        if (settings.batch_size or 1) != 1:
            raise HarnessError(
                f"{configs.NAME} answers one volume per call (its windows are the model's batch): "
                f"--batch_size must be 1, not {settings.batch_size}"
            )
        scratch = options.scratch_path
        model = resources.choose_model(options.model_path, scratch)
        data = resources.choose_data(options.data_dir, scratch, model)
        dataset = load_preprocessed(_preprocess(options, data))
        total = len(dataset)
        total = counted_samples(options, total, f"cases of {data.origin}")
        engines = unet3d_engines(
            backend, precision, model, options.engine_dir or scratch / "engines"
        )
        stand_in = model.stand_in or not data.is_inference_set
        if stand_in:
            print(f"3d-unet: {model.origin}; {data.origin}", file=sys.stderr)
        sizes = np.array([int(np.prod(dataset.shape(i))) for i in range(len(dataset))], np.int64)

        def wrap(runner: Runner) -> Runner:
            # The CPU backend sees windows: the harness's samples are volumes (the torch backend's
            # volume runner does the same on the GPU itself; the null backend computes nothing).
            return (
                SlidingWindowRunner(runner, CPU_WINDOW_BATCH)
                if backend == "onnxruntime"
                else runner
            )

        return PreparedRun(
            store=VolumeStore(
                dataset.load_image, total, PERFORMANCE_SAMPLE_COUNT, (1, WINDOW, WINDOW, WINDOW)
            ),
            backend_options=BackendOptions(
                model_path=engines[0],
                extra_engine_paths=tuple(engines[1:]),
                output_name=OUTPUT_NAME,
                volume_windows=backend == "torch",
            ),
            stand_in=stand_in,
            model_sha256=model.sha256,
            reference_accuracy=model.reference_dice,
            accuracy_fraction=rules.accuracy_fraction,
            provenance={
                "model": model.origin,
                "data": data.origin,
                "preprocessed": str(dataset.directory),
                "engine": str(engines[0]),
                "engines": " ".join(str(path) for path in engines),
            },
            response_bytes=None if backend == "null" else sizes,
            wrap_runner=wrap,
        )

    def expects_stand_in(self, options: RunOptions) -> bool:
        scratch = options.scratch_path
        model = options.model_path or resources.default_model_path(scratch)
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        return not (model.is_file() and data_dir.is_dir())

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        return (options.model_path or resources.default_model_path(options.scratch_path),)

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        dataset = load_preprocessed(Path(prepared.provenance["preprocessed"]))
        accuracy = score_accuracy_log(log_dir / ACCURACY_FILE, dataset)
        write_accuracy_txt(log_dir, accuracy)
        reference = prepared.reference_accuracy
        fraction = prepared.accuracy_fraction or _RULES.accuracy_fraction
        target = None if reference is None else reference * fraction
        passed = target is not None and accuracy.complete and accuracy.mean >= target
        record = {
            "mean_dice": round(accuracy.mean, 5),
            "kidney_dice": round(accuracy.kidney, 4),
            "tumour_dice": round(accuracy.tumour, 4),
            "cases": len(accuracy.cases),
            "total_cases": accuracy.total_cases,
            "reference_dice": reference,
            "target_fraction": fraction,
            "target_dice": None if target is None else round(target, 5),
            "passed": passed,
        }
        return AccuracyReport(accuracy.line(), record, passed)

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        model = resources.choose_model(options.model_path, options.scratch_path)
        data = resources.choose_data(options.data_dir, options.scratch_path, model)
        dataset: KitsPreprocessed = load_preprocessed(_preprocess(options, data))
        return score_accuracy_log(accuracy_log, dataset).mean


def _preprocess(options: RunOptions, data: resources.DataChoice) -> Path:
    """The run's preprocessed cases: --preprocessed_dir, else the stand-in's own, else one
    directory per raw set; brought up to date (a no-op when it is)."""
    if options.preprocessed_dir is None and data.preprocessed is not None:
        return data.preprocessed  # the stand-in's, made and checked with it
    directory = options.preprocessed_dir or resources.default_preprocessed_dir(
        options.scratch_path, data
    )
    preprocess_dataset(data.data_dir, directory, cases=data.cases)
    return directory


BENCHMARK = Unet3d()
