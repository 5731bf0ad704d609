"""ResNet-50 v1.5 on ImageNet: the MLPerf image classification benchmark."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.imagenet import top1_from_log, write_accuracy_txt
from mlperf_harness.backends.registry import WITHOUT_ENGINE, BackendOptions
from mlperf_harness.benchmarks.resnet50 import configs, resources, stand_in_model
from mlperf_harness.benchmarks.resnet50.engines import CALIBRATED, resnet50_engine
from mlperf_harness.benchmarks.resnet50.stand_in_model import LABEL_OFFSET
from mlperf_harness.benchmarks.spec import AccuracyReport, Benchmark, PreparedRun, counted_samples
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.imagenet.layout import IMAGENET_SUBDIR, VAL_MAP_NAME, check_layout
from mlperf_harness.datasets.imagenet.preprocess import FP32, PreprocessedSamples, preprocess_data
from mlperf_harness.engines.torch_aot.engine import engine_batch_sizes
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 1024  # mlperf.conf's value for resnet50


_RULES = model_rules(configs.NAME)
ACCURACY_FRACTION = _RULES.accuracy_fraction  # closed division: 99% of the FP32 reference


class ResNet50(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = _RULES.accuracy_log_sampling_target
    response_dtype = "int32"  # the predicted ImageNet label (see postprocess)
    input_data_type = "fp32"  # images preprocessed to fp32 for every backend

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        scratch = options.scratch_path
        model = resources.choose_model(options.model_path, scratch)
        data = resources.choose_data(options.data_dir, scratch)
        counted_samples(options, len(data.val_set), f"images of {data.origin}")
        backend = settings.backend or "onnxruntime"
        precision = settings.precision or "fp32"
        calibration = (
            resources.choose_calibration(model, data, scratch)
            if precision in CALIBRATED and backend not in WITHOUT_ENGINE
            else None
        )
        engine_paths = [
            resnet50_engine(
                backend,
                precision,
                model,
                data,
                scratch,
                options.engine_dir or scratch / "engines",
                batch_size=size,
                calibration=calibration,
            )[0]
            for size in engine_batch_sizes(backend, options.scenario, settings.batch_size or 1)
        ]
        # end_on_device (default): the engine's own ArgMax, 8 bytes a sample; off: the softmax
        # comes back and postprocess takes the argmax on the host.
        output = (
            stand_in_model.SOFTMAX_OUTPUT
            if settings.end_on_device is False
            else stand_in_model.ARGMAX_OUTPUT
        )
        preprocessed_dir = options.preprocessed_dir or resources.default_preprocessed_dir(
            scratch, data.val_set.image_dir
        )
        preprocess_data(data.val_set.image_dir, preprocessed_dir, formats=(FP32,))
        samples = PreprocessedSamples(preprocessed_dir)
        total = min(len(samples), options.count) if options.count else len(samples)
        stand_in = model.stand_in or data.generated or not data.val_set.is_full
        # (expects_stand_in tells the same without building anything: keep the two alike.)
        if stand_in:
            print(f"resnet50: {model.origin}; {data.origin}", file=sys.stderr)
        return PreparedRun(
            store=PreloadedSampleStore(
                lambda indices: samples.load(indices, FP32), total, PERFORMANCE_SAMPLE_COUNT
            ),
            backend_options=BackendOptions(
                model_path=engine_paths[0],
                extra_engine_paths=tuple(engine_paths[1:]),
                output_name=output,
            ),
            stand_in=stand_in,
            model_sha256=model.sha256,
            labels=samples.labels[:total],
            # The ArgMax's label, less the background class (postprocess, done in C++ where the
            # latency scenarios' round trips run there); the softmax needs postprocess itself.
            label_offset=None if output == stand_in_model.SOFTMAX_OUTPUT else LABEL_OFFSET,
            reference_accuracy=model.reference_top1,
            provenance={
                "model": model.origin,
                "data": data.origin,
                "engine": str(engine_paths[0]),
                "engines": " ".join(str(path) for path in engine_paths),
                "preprocessed": str(preprocessed_dir),
                # What int8 or fp8 calibration saw, for the submission's documentation/calibration.md.
                **({"calibration": calibration.description} if calibration else {}),
            },
        )

    def expects_stand_in(self, options: RunOptions) -> bool:
        # prepare's choice (a stand-in model, generated or partial data), from what is on disk.
        scratch = options.scratch_path
        model = options.model_path or resources.default_model_path(scratch)
        if not model.is_file():
            return options.model_path is None  # a missing --model_path fails the run anyway
        if resources.is_stand_in_model(model):
            return True
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        found = (data_dir / IMAGENET_SUBDIR).is_dir() or (data_dir / VAL_MAP_NAME).is_file()
        if options.data_dir is None and not found:
            return True  # generated images
        return not check_layout(data_dir).is_full

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        scratch = options.scratch_path
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        return (
            options.model_path or resources.default_model_path(scratch),
            data_dir / VAL_MAP_NAME,
            data_dir / IMAGENET_SUBDIR / VAL_MAP_NAME,
        )

    def postprocess(self, outputs: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        # The model's ArgMax counts background as class 0; ImageNet labels start at 0 one later.
        rows = outputs.reshape(len(outputs), -1)
        if rows.shape[1] > 1:  # softmax rows (end_on_device off): the argmax is taken here
            rows = rows.argmax(axis=1).reshape(-1, 1)
        labels = rows[:, :1].astype(np.int32)
        return labels - np.int32(LABEL_OFFSET)

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        accuracy = top1_from_log(log_dir / ACCURACY_FILE, prepared.labels)
        write_accuracy_txt(log_dir, accuracy)
        reference = prepared.reference_accuracy
        passed = reference is not None and accuracy.meets(reference, ACCURACY_FRACTION)
        record = {
            "top1_percent": round(accuracy.percent, 3),
            "good": accuracy.good,
            "total": accuracy.total,
            "reference_top1_percent": reference,
            "target_percent": None
            if reference is None
            else round(reference * ACCURACY_FRACTION, 3),
            "passed": passed,
        }
        return AccuracyReport(accuracy.line(), record, passed)

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        data = resources.choose_data(options.data_dir, options.scratch_path)
        labels = [label for _name, label in data.val_set.entries]
        return top1_from_log(accuracy_log, labels).percent


BENCHMARK = ResNet50()
