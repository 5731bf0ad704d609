"""RetinaNet's FP8 network on the CPU: the stand-in's held-out mAP with the FP8 plan beside the
same network in fp32 and fp16, to decide what the GPU engine quantizes (docs/retinanet.md, "FP8 on
the GPU").

The torch variants are the shared converter's module (engines/torch_aot) on the CPU, then the
benchmark's own postprocessing and mAP (detections.py, accuracy/openimages.py), as the stand-in's
build measures it: `fp32` and `fp16` the network in that precision; `fp8` the FP8 engine's module
(engines/torch_fp8/module.py) quantizing what the GPU engine quantizes (torch_retinanet/build.py,
FP8_CLASS_LOGITS_IN_FP16); `fp8_logits16` the same with the class logits kept in fp16. The FP8
convolutions run `ops.conv`'s CPU reference, which is what the kernels compute up to the order of
their fp32 sums; everything else runs in fp16 as on the GPU. The `ort_*` variants are the same
plan's rounding as ONNX fake quantization in ONNX Runtime (fp8_fake_quant.py: code apart from the
engine's, and fast): `ort_fp8` all of it, `ort_weights` the e4m3 weights only, `ort_activations`
the e4m3 activations only. Calibrated as the GPU engine is, on the stand-in's calibration split;
the maxima are written where the engine builder looks for them
(<scratch>/engines/calibration/retinanet/), so a GPU build on the same scratch reuses them.

    python -m mlperf_harness.benchmarks.retinanet.fp8_accuracy [--variants fp32,fp8,ort_fp8,...]

Needs torch (a CPU build will do) and triton (imported by the FP8 operators; nothing is compiled)
for the torch variants. A development command, not part of the harness: on a shared 2-core CPU
about 1-5 minutes a torch variant (fp16 the slowest), well under one an `ort_*` variant.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import onnx

from mlperf_harness.accuracy.openimages import score_rows
from mlperf_harness.benchmarks.retinanet import resources
from mlperf_harness.benchmarks.retinanet.build_stand_in_model import run_model
from mlperf_harness.benchmarks.retinanet.detections import Postprocessor
from mlperf_harness.benchmarks.retinanet.fp8_fake_quant import fake_quant_model
from mlperf_harness.benchmarks.retinanet.quantization import class_logit_convolutions
from mlperf_harness.benchmarks.retinanet.stand_in_model import OUTPUT_NAME
from mlperf_harness.cli.parsing import (
    OneLineParser,
    add_scratch_flag,
    run_entry_point,
    scratch_path,
)
from mlperf_harness.datasets.openimages.layout import check_layout
from mlperf_harness.datasets.openimages.preprocess import PreprocessedImages
from mlperf_harness.engines.torch_aot import onnx_to_torch
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.engines.torch_fp8 import calibrate, plan
from mlperf_harness.engines.torch_retinanet.build import fp8_fp16_convs
from mlperf_harness.errors import HarnessError

VARIANTS = ("fp32", "fp16", "fp8", "fp8_logits16", "ort_fp8", "ort_weights", "ort_activations")
ORT_ROUNDING = {  # fp8_fake_quant's switches: (weights, activations)
    "ort_fp8": (True, True),
    "ort_weights": (True, False),
    "ort_activations": (False, True),
}
BATCH = 2


def fp8_network(
    model_path: Path,
    amax: dict[str, float],
    fp16_convs: Sequence[str],
    outputs: Sequence[str] = (OUTPUT_NAME,),
) -> tuple[Any, plan.Fp8Plan]:
    """The FP8 engine's module of the model computing `outputs` (CPU: every operator its
    reference), and its plan."""
    from mlperf_harness.engines.torch_fp8 import module, tuning

    fp8_plan = plan.plan_fp8(onnx_to_torch.load_model(model_path), amax, fp16_convs)
    configs = [tuning.candidates_for(layer)[0] for layer in fp8_plan.layers]  # unused on the CPU
    return module.Fp8EngineModule(fp8_plan, configs, list(outputs)).eval(), fp8_plan


def plain_network(model_path: Path, precision: str) -> Any:
    """The converter's module in fp32 or fp16, channels-last, as the torch engines compute."""
    torch = import_torch()
    from mlperf_harness.engines.torch_aot.torch_module import EngineModule

    graph = onnx_to_torch.to_torch_module(onnx_to_torch.load_model(model_path), [OUTPUT_NAME])
    dtype = torch.float32 if precision == "fp32" else torch.float16
    return EngineModule(graph, dtype, channels_last=True).eval()


def held_out_map(
    network: Any, images: PreprocessedImages, annotations: Path
) -> tuple[float, float]:
    """(mAP, AP50) in percent over the held-out pictures, through the benchmark's postprocessing;
    `network` a torch module, or ONNX model bytes (run by ONNX Runtime)."""
    postprocessor = Postprocessor()
    rows = {}
    if isinstance(network, bytes):
        pictures = [images.load([i])[0] for i in range(len(images))]
        for index, head in enumerate(run_model(network, pictures, BATCH)):
            rows[index] = postprocessor.rows(postprocessor.detect(head), index)
    else:
        torch = import_torch()
        with torch.no_grad():
            for start in range(0, len(images), BATCH):
                indices = list(range(start, min(start + BATCH, len(images))))
                (heads,) = network(torch.from_numpy(images.load(indices)))
                for index, head in zip(indices, heads.float().numpy(), strict=True):
                    rows[index] = postprocessor.rows(postprocessor.detect(head), index)
    accuracy = score_rows(annotations, rows)
    return accuracy.map_percent, accuracy.ap50_percent


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="fp8_accuracy",
        description="RetinaNet stand-in's held-out mAP with the FP8 network on the CPU.",
    )
    add_scratch_flag(parser)
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"comma-separated, of {', '.join(VARIANTS)} (default: all)",
    )

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        variants = [v for v in args.variants.split(",") if v]
        unknown = [v for v in variants if v not in VARIANTS]
        if unknown or not variants:
            raise HarnessError(f"--variants takes {', '.join(VARIANTS)}, not {args.variants!r}")
        scratch = scratch_path(args.scratch_path, os.environ)
        model = resources.choose_model(None, scratch)
        data = resources.choose_data(None, scratch, model)
        if data.preprocessed is None:
            raise HarnessError("the stand-in's held-out pictures come preprocessed; none found")
        images = PreprocessedImages(data.preprocessed)
        annotations = check_layout(data.images.data_dir).annotations_file
        engine_fp16 = fp8_fp16_convs(model.path)  # what the GPU engine keeps in fp16
        amax: dict[str, float] = {}
        if any(v != "fp32" and v != "fp16" for v in variants):
            calibration = resources.choose_calibration(model, data, scratch)
            key = calibrate.amax_key(model.sha256, calibration)
            # Every tensor any variant reads in e4m3 (the class towers' last outputs too), where
            # the GPU engine's builder looks (torch_aot/engine.py, torch_retinanet/build.py).
            cache = scratch / "engines" / "calibration" / "retinanet" / f"{key}-fp8.json"
            tensors = plan.calibrated_tensors(onnx_to_torch.load_model(model.path))
            amax = calibrate.activation_amax(model.path, tensors, calibration, cache)
            print(f"calibration: {calibration.description} ({cache})")
        print(f"model {model.path}: {model.origin}; {len(images)} held-out pictures")
        reference = None
        for variant in variants:
            started = time.monotonic()
            summary = ""
            network: Any
            if variant in ("fp32", "fp16"):
                network = plain_network(model.path, variant)
            elif variant in ORT_ROUNDING:
                weights, activations = ORT_ROUNDING[variant]
                network = fake_quant_model(
                    onnx.load(str(model.path)),
                    amax,
                    engine_fp16,
                    weights=weights,
                    activations=activations,
                ).SerializeToString()
            else:
                kept = class_logit_convolutions(model.path) if variant == "fp8_logits16" else ()
                network, fp8_plan = fp8_network(model.path, amax, kept or engine_fp16)
                summary = f"  [{fp8_plan.summary()}]"
            map_percent, ap50 = held_out_map(network, images, annotations)
            if variant == "fp32":
                reference = map_percent
            of_fp32 = f"{100 * map_percent / reference:6.1f}% of fp32" if reference else ""
            print(
                f"{variant:8} mAP {map_percent:7.3f}%  AP50 {ap50:7.3f}%  {of_fp32}  "
                f"({time.monotonic() - started:.0f} s){summary}",
                flush=True,
            )
        return 0

    return run_entry_point("fp8_accuracy", run)


if __name__ == "__main__":
    sys.exit(main())
