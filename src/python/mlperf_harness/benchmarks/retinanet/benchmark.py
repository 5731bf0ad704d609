"""RetinaNet on the OpenImages MLPerf subset: the MLPerf object detection benchmark (last in round
v6.0). A sample is one preprocessed 800x800 image; its response is its detections, seven float32
values each (detections.py), as many as the postprocessing keeps: the responses' lengths vary."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.openimages import score_accuracy_log, write_accuracy_txt
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.retinanet import configs, resources
from mlperf_harness.benchmarks.retinanet.detections import Postprocessor
from mlperf_harness.benchmarks.retinanet.engine_detections import ENGINE_OUTPUT, engine_rows
from mlperf_harness.benchmarks.retinanet.engines import (
    CALIBRATED,
    check_precision,
    retinanet_engines,
)
from mlperf_harness.benchmarks.retinanet.stand_in_model import OUTPUT_NAME
from mlperf_harness.benchmarks.spec import (
    STAND_IN_SECONDS,
    AccuracyReport,
    Benchmark,
    PreparedRun,
    counted_samples,
)
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.openimages.layout import ANNOTATIONS_FILE
from mlperf_harness.datasets.openimages.preprocess import (
    FP32,
    PreprocessedImages,
    preprocess_dataset,
)
from mlperf_harness.engines.torch_retinanet.nms_ways import DEFAULT_NMS
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.harness.sut import SizedPostprocess, SizedRows
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 64  # mlperf.conf's value for retinanet
LAST_ROUND = "v6.0"  # the newest round whose checker lists retinanet
_RULES = model_rules(configs.NAME, LAST_ROUND)
# A stand-in's latency runs: enough queries to finish in minutes on a CPU (an image takes a
# fraction of a second there), not LoadGen's early-stopping counts: only Offline is VALID by
# design on a CPU (Server's 100 ms bound is below one image's time there).
_STAND_IN_QUERIES = {
    Scenario.OFFLINE: 1,
    Scenario.SERVER: 64,
    Scenario.SINGLE_STREAM: 64,
    Scenario.MULTI_STREAM: 16,
}


class RetinaNet(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = _RULES.accuracy_log_sampling_target
    response_dtype = "float32"  # seven values per detection
    input_data_type = "fp32"

    def stand_in_run(self, scenario: Scenario) -> HarnessSettings:
        seconds = STAND_IN_SECONDS if scenario is Scenario.OFFLINE else 20
        return HarnessSettings(
            min_duration_ms=seconds * 1000, min_query_count=_STAND_IN_QUERIES[scenario]
        )

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        backend = settings.backend or configs.RetinaNet.backend
        precision = settings.precision or configs.RetinaNet.precision
        if backend not in ("onnxruntime", "torch", "null"):
            raise HarnessError(
                f"{configs.NAME} runs on onnxruntime (CPU) or torch (GPU), not --backend {backend}"
            )
        check_precision(backend, precision)
        scratch = options.scratch_path
        model = resources.choose_model(options.model_path, scratch)
        data = resources.choose_data(options.data_dir, scratch, model)
        preprocessed_dir = _preprocess(options, data)
        samples = PreprocessedImages(preprocessed_dir)
        total = len(samples)
        total = counted_samples(options, total, f"images of {data.origin}")
        calibrated = (backend, precision) in CALIBRATED
        calibration = resources.choose_calibration(model, data, scratch) if calibrated else None
        engines = retinanet_engines(
            backend,
            precision,
            model,
            options.engine_dir or scratch / "engines",
            options.scenario,
            settings.batch_size or 1,
            calibration,
            settings.nms or DEFAULT_NMS,
        )
        stand_in = model.stand_in or data.generated or not data.images.is_full
        if stand_in:
            print(f"retinanet: {model.origin}; {data.origin}", file=sys.stderr)
        return PreparedRun(
            store=PreloadedSampleStore(
                lambda indices: samples.load(indices, FP32), total, PERFORMANCE_SAMPLE_COUNT
            ),
            backend_options=BackendOptions(
                model_path=engines[0],
                extra_engine_paths=tuple(engines[1:]),
                output_name=ENGINE_OUTPUT if backend == "torch" else OUTPUT_NAME,
            ),
            stand_in=stand_in,
            model_sha256=model.sha256,
            reference_accuracy=model.reference_map,
            accuracy_fraction=_RULES.accuracy_fraction,
            provenance={
                "model": model.origin,
                "data": data.origin,
                "annotations": str(data.images.annotations_file),
                "preprocessed": str(preprocessed_dir),
                "engine": str(engines[0]),
                # What int8 or fp8 calibration saw, for the submission's
                # documentation/calibration.md.
                **({"calibration": calibration.description} if calibration else {}),
            },
            sized_postprocess=detections_for(backend),
        )

    def served_sized_postprocess(self, prepared: PreparedRun, backend: str) -> SizedPostprocess:
        return detections_for(backend)

    def expects_stand_in(self, options: RunOptions) -> bool:
        scratch = options.scratch_path
        model = options.model_path or resources.default_model_path(scratch)
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        return not (model.is_file() and (data_dir / ANNOTATIONS_FILE).is_file())

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        scratch = options.scratch_path
        data_dir = options.data_dir or resources.default_data_dir(scratch)
        return (
            options.model_path or resources.default_model_path(scratch),
            data_dir / ANNOTATIONS_FILE,
        )

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        accuracy = score_accuracy_log(
            log_dir / ACCURACY_FILE, Path(prepared.provenance["annotations"])
        )
        write_accuracy_txt(log_dir, accuracy)
        reference = prepared.reference_accuracy
        fraction = prepared.accuracy_fraction or _RULES.accuracy_fraction
        target = None if reference is None else reference * fraction
        passed = target is not None and accuracy.complete and accuracy.map_percent >= target
        record = {
            "map_percent": round(accuracy.map_percent, 3),
            "ap50_percent": round(accuracy.ap50_percent, 3),
            "images": accuracy.images,
            "total_images": accuracy.total_images,
            "detections": accuracy.detections,
            "reference_map_percent": reference,
            "target_fraction": fraction,
            "target_map_percent": None if target is None else round(target, 3),
            "passed": passed,
        }
        return AccuracyReport(accuracy.line(), record, passed)

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        model = resources.choose_model(options.model_path, options.scratch_path)
        data = resources.choose_data(options.data_dir, options.scratch_path, model)
        return score_accuracy_log(accuracy_log, data.images.annotations_file).map_percent


def _preprocess(options: RunOptions, data: resources.DataChoice) -> Path:
    """The run's preprocessed images: --preprocessed_dir, else the stand-in's own, else one
    directory per data directory; brought up to date (a no-op when it is)."""
    if options.preprocessed_dir is None and data.preprocessed is not None:
        return data.preprocessed
    directory = options.preprocessed_dir or resources.default_preprocessed_dir(
        options.scratch_path, data.images.data_dir
    )
    preprocess_dataset(data.images.data_dir, directory)
    return directory


BENCHMARK = RetinaNet()


def detections_for(backend: str) -> SizedPostprocess:
    """Each image's detection rows from what `backend`'s runners return."""
    postprocessor = Postprocessor()

    def detections(outputs: npt.NDArray[np.generic], indices: Sequence[int]) -> SizedRows:
        if backend == "null":  # nothing computed: every image answered with no detections
            return SizedRows(
                np.zeros((len(indices), 0), np.uint8), np.zeros(len(indices), np.int64)
            )
        if backend == "torch":  # decoded and suppressed on the GPU: the detections came back
            return SizedRows(*engine_rows(outputs, list(indices)))
        rows, sizes = postprocessor.batch_rows(np.asarray(outputs, dtype=np.float32), list(indices))
        return SizedRows(rows, sizes)

    return detections
