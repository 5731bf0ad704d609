"""Stable Diffusion XL on COCO 2014 captions: MLPerf's text-to-image benchmark (`stable-diffusion-xl`,
round v6.1). A sample is one caption's two token rows; its response is the generated image as uint8
[H, W, 3] (1024 x 1024 for SDXL), the bytes MLCommons' accuracy_coco.py reshapes. A sample is a
loop, not one model call: two text encoders, 20 guided UNet steps and the VAE decoder
(pipeline.py); a batch of samples shares every call of the loop."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

from mlperf_harness.accuracy import coco_t2i
from mlperf_harness.accuracy.coco_t2i import Extractors
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.sdxl import configs, resources, stand_in, unet_fp8
from mlperf_harness.benchmarks.sdxl.pipeline import (
    NEGATIVE_PROMPT,
    PipelineInputs,
    pack_rows,
    pipeline_runners,
)
from mlperf_harness.benchmarks.spec import (
    STAND_IN_SECONDS,
    AccuracyReport,
    Benchmark,
    PreparedRun,
    counted_samples,
)
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets import coco_t2i as data
from mlperf_harness.datasets.clip_bpe import ClipTokenizer, read_merges
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 5000  # mlperf.conf's stable-diffusion-xl override
_RULES = model_rules(configs.NAME)
# accuracy_coco.py's default compliance ids (tools/sample_ids.txt): v6.1's checker lists none of
# its own (its REQUIRED_ACC_BENCHMARK stops at v6.0), so these are the images a run writes.
COMPLIANCE_IDS = (4475, 3627, 1046, 4937, 3867, 1671, 3789, 1206, 4111, 3093)
STAND_IN_COMPLIANCE_IDS = tuple(range(10))  # the stand-in's own list: its first ten captions
IMAGES_DIR = "images"
# The stand-in's latency runs: a few queries (a sample is a whole generation), not LoadGen's
# early-stopping counts: only Offline is VALID by design on a CPU.
_STAND_IN_QUERIES = {Scenario.OFFLINE: 1, Scenario.SERVER: 64, Scenario.SINGLE_STREAM: 64}


class Sdxl(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = _RULES.accuracy_log_sampling_target
    response_dtype = "uint8"  # the image's bytes
    input_data_type = "int64"  # token ids, as the reference's tokenizers return them

    def stand_in_run(self, scenario: Scenario) -> HarnessSettings:
        seconds = STAND_IN_SECONDS if scenario is Scenario.OFFLINE else 20
        return HarnessSettings(
            min_duration_ms=seconds * 1000, min_query_count=_STAND_IN_QUERIES.get(scenario, 16)
        )

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        backend = settings.backend or configs.Sdxl.backend
        if backend not in ("onnxruntime", "torch", "null"):
            raise HarnessError(
                f"{configs.NAME} runs on onnxruntime (CPU) or torch (GPU), not --backend {backend}"
            )
        # the UNet's precision on the torch backend, refused before any file is read; the CPU's
        # graphs are fp32 only
        precision = unet_fp8.check_precision(settings.precision) if backend == "torch" else None
        if backend == "onnxruntime" and (settings.precision or "fp32") != "fp32":
            raise HarnessError(
                f"{configs.NAME} on onnxruntime runs its fp32 graphs, not --precision "
                f"{settings.precision} (fp16 and fp8 are the torch backend's, on a GPU)"
            )
        scratch = options.scratch_path
        files = resources.choose(options.model_path, options.data_dir, scratch, backend)
        preprocessed_dir = options.preprocessed_dir or resources.default_preprocessed_dir(
            scratch, files.captions
        )
        tokens = data.preprocess(
            files.captions, files.merges, preprocessed_dir, files.expected_captions
        ).input_ids
        total = counted_samples(options, len(tokens), f"captions of {files.data_origin}")
        latents = data.read_latents(files.latents)
        first, second = (ClipTokenizer(read_merges(path)) for path in files.merges)
        negative = data.token_rows([NEGATIVE_PROMPT], first, second)[0]
        inputs = PipelineInputs(latents, negative)
        if files.stand_in:
            print(f"sdxl: {files.model_origin}; {files.data_origin}", file=sys.stderr)
        packed = pack_rows(tokens)
        # What the accuracy must fall in: the reference's ranges, or the stand-in's own (stand_in.py).
        fid_range, clip_range = coco_t2i.FID_RANGE, coco_t2i.CLIP_RANGE
        if files.built is not None:
            fid_range, clip_range = files.built.fid_range(), files.built.clip_range()
        count = stand_in.SAMPLES if files.stand_in else PERFORMANCE_SAMPLE_COUNT
        # result.json's provenance; the torch engine adds its UNet's precision (and FP8 layers) as
        # it loads
        provenance = {
            "model": files.model_origin,
            "data": files.data_origin,
            "captions": str(files.captions),
            "merges": str(files.merges[0]),
            "statistics": str(files.statistics),
            "metrics": str(files.metrics_dir),
            "stand_in": "yes" if files.stand_in else "no",
            "preprocessed": str(preprocessed_dir),
            "fid_range": f"{fid_range[0]!r} {fid_range[1]!r}",
            "clip_range": f"{clip_range[0]!r} {clip_range[1]!r}",
        }
        return PreparedRun(
            store=PreloadedSampleStore(lambda indices: packed[list(indices)], total, count),
            backend_options=BackendOptions(
                model_path=files.model_dir,
                runner_factory=functools.partial(
                    pipeline_runners,
                    model_dir=files.model_dir,
                    inputs=inputs,
                    precision=precision or unet_fp8.FP16,
                    record=provenance,
                ),
            ),
            stand_in=files.stand_in,
            model_sha256=files.sha256 if backend == "onnxruntime" else None,
            accuracy_fraction=_RULES.accuracy_fraction,
            provenance=provenance,
        )

    def expects_stand_in(self, options: RunOptions) -> bool:
        model = options.model_path or resources.default_model_dir(options.scratch_path)
        return options.data_dir is None and not model.is_dir()

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        if self.expects_stand_in(options):
            return ()
        directory = options.data_dir or resources.default_data_dir(options.scratch_path)
        return (data.captions_file(directory),)

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        provenance = prepared.provenance
        is_stand_in = provenance.get("stand_in") == "yes"
        captions = [c.caption for c in data.read_captions(Path(provenance["captions"]))]
        extractors = _extractors(
            Path(provenance["metrics"]), Path(provenance["merges"]), is_stand_in
        )
        indexed = list(coco_t2i.iter_log_images(log_dir / ACCURACY_FILE))
        accuracy = coco_t2i.score_images(
            indexed, captions, coco_t2i.read_statistics(Path(provenance["statistics"])), extractors
        )
        coco_t2i.write_accuracy_txt(log_dir, accuracy)
        ids = STAND_IN_COMPLIANCE_IDS if is_stand_in else COMPLIANCE_IDS
        coco_t2i.write_compliance_images(log_dir / IMAGES_DIR, indexed, ids, captions)
        fid_range = _range(provenance["fid_range"])
        clip_range = _range(provenance["clip_range"])
        passed = (
            accuracy.complete
            and fid_range[0] <= accuracy.fid <= fid_range[1]
            and clip_range[0] <= accuracy.clip <= clip_range[1]
        )
        record = {
            "fid": round(accuracy.fid, 4),
            "clip_score": round(accuracy.clip, 4),
            "images": accuracy.images,
            "total_images": accuracy.total,
            "fid_range": [round(v, 4) for v in fid_range],
            "clip_range": [round(v, 4) for v in clip_range],
            "passed": passed,
        }
        return AccuracyReport(accuracy.line(), record, passed)

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        """The CLIP score (the checker's first metric) over whichever samples the log holds."""
        files = resources.choose(options.model_path, options.data_dir, options.scratch_path)
        captions = [c.caption for c in data.read_captions(files.captions)]
        extractors = _extractors(files.metrics_dir, files.merges[0], files.stand_in)
        images = list(coco_t2i.iter_log_images(accuracy_log))
        for idx, _ in images:
            if not 0 <= idx < len(captions):
                raise HarnessError(f"{accuracy_log} answers sample {idx}, beyond the captions")
        scores = extractors.clip_scores([im for _, im in images], [captions[i] for i, _ in images])
        return float(np.mean(scores))


def _range(text: str) -> tuple[float, float]:
    low, high = (float(v) for v in text.split())
    return low, high


def _extractors(metrics_dir: Path, merges: Path, is_stand_in: bool) -> Extractors:
    tokenizer = ClipTokenizer(read_merges(merges))
    if is_stand_in:
        return stand_in.stand_in_extractors(metrics_dir, tokenizer)
    from mlperf_harness.accuracy.t2i_weights import official_extractors

    extractors: Extractors = official_extractors(metrics_dir, tokenizer)
    return extractors


BENCHMARK = Sdxl()
