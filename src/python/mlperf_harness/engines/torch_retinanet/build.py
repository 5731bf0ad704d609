"""Build RetinaNet's torch engine: the ONNX model through the shared converter, its GPU
postprocessing appended (module.py), exported and compiled by AOTInductor into a package the shared
runner (backends/torch_cuda/runner.py) loads, replays under CUDA graphs and reads `detections` from.

In fp8 the network is the FP8 engine's (engines/torch_fp8: calibrated, planned, its convolutions'
tilings tuned on this GPU) with the same postprocessing appended, saved as that engine is: a
torch.export program with its Triton kernels beside it (torch_fp8/exported.py says why not
AOTInductor), which the runner loads by its file name. So in fp8 the postprocessing runs as eager
kernels replayed in the runner's CUDA graph, not fused by Inductor as in the fp16 package.

Keyed like every torch engine (engines/torch_aot/engine.py), with this package's code and the
postprocessing's constants in the key. torch is imported inside the functions: CPU hosts import
this module for keys and the benchmark's wiring without it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import onnx

from mlperf_harness.benchmarks.retinanet.detections import BOX_VALUES
from mlperf_harness.benchmarks.retinanet.engine_detections import ENGINE_OUTPUT
from mlperf_harness.benchmarks.retinanet.quantization import class_logit_convolutions
from mlperf_harness.benchmarks.retinanet.stand_in_model import OUTPUT_NAME
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.calibration import Calibration
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.engines.torch_aot import build as aot_build
from mlperf_harness.engines.torch_aot import onnx_to_torch
from mlperf_harness.engines.torch_aot.engine import (
    BUILDER_MODULES,
    FP8_BUILDER_MODULES,
    FP8_TUNING_KERNELS,
    check_spec_torch,
    torch_engine_spec,
)
from mlperf_harness.engines.torch_fp8 import build as fp8_build
from mlperf_harness.engines.torch_fp8 import calibrate as fp8_calibrate
from mlperf_harness.engines.torch_retinanet.nms_ways import DEFAULT_NMS, check_nms
from mlperf_harness.errors import HarnessError

NAME = "retinanet"
PRECISIONS = ("fp16", "fp32", fp8_build.PRECISION)
# Whether the FP8 engine keeps the class logits' convolutions in fp16 (as int8 does, for
# quantization.py's reasons). No: on the stand-in keeping them gained nothing (held-out mAP
# 7.265% kept, 7.483% in FP8; an ONNX Runtime account of the same rounding agrees), the loss is the
# e4m3 weights' everywhere, and they are the largest convolution of the real-size network
# (docs/retinanet.md, "FP8 on the GPU").
FP8_CLASS_LOGITS_IN_FP16 = False
RETINANET_MODULES = (
    "mlperf_harness.engines.torch_retinanet.build",
    "mlperf_harness.engines.torch_retinanet.module",
    "mlperf_harness.engines.torch_retinanet.postprocess",
    "mlperf_harness.engines.torch_retinanet.nms_kernel",
    "mlperf_harness.engines.torch_retinanet.nms_op",
    "mlperf_harness.engines.torch_retinanet.nms_ways",
    "mlperf_harness.benchmarks.retinanet.anchors",
    "mlperf_harness.benchmarks.retinanet.detections",
    "mlperf_harness.benchmarks.retinanet.engine_detections",
    "mlperf_harness.benchmarks.retinanet.quantization",
)
# Registers mlperf_retinanet::greedy_keep, which the FP8 engine's program calls (its NMS).
NMS_OPERATOR_MODULE = "mlperf_harness.engines.torch_retinanet.nms_op"
RETINANET_BUILDER_MODULES = (*BUILDER_MODULES, *RETINANET_MODULES)
RETINANET_FP8_BUILDER_MODULES = (*FP8_BUILDER_MODULES, *RETINANET_MODULES)


def head_output_names(model: onnx.ModelProto) -> tuple[str, ...]:
    """What the engine's network computes for its postprocessing: each level's box deltas and class
    logits, (boxes, logits) level by level, where the model concatenates them into OUTPUT_NAME as
    the stand-in's layout does (a Concat over the levels of a Concat of the two); otherwise
    OUTPUT_NAME itself. The concatenation is the largest copy in the engine (1.25 ms of a batch of
    8's 12 on an H200, 2026-11-30): the level tensors are views of the heads' channels-last
    convolution outputs, which the postprocessing reads where they lie."""
    producer = {output: node for node in model.graph.node for output in node.output}

    def concat_inputs(name: str, axis: int) -> list[str] | None:
        node = producer.get(name)
        if node is None or node.op_type != "Concat":
            return None
        given = next((a.i for a in node.attribute if a.name == "axis"), None)
        return list(node.input) if given in (axis, axis - 3) else None  # rank 3: -2 is 1

    levels = concat_inputs(OUTPUT_NAME, 1)
    pairs = [concat_inputs(level, 2) for level in levels or []]
    if levels is None or any(pair is None or len(pair) != 2 for pair in pairs):
        return (OUTPUT_NAME,)
    return tuple(name for pair in pairs if pair is not None for name in pair)


def head_classes(model: onnx.ModelProto) -> int:
    """The class count of a model with the harness's interface: its output's last dimension."""
    for output in model.graph.output:
        if output.name == OUTPUT_NAME:
            dims = output.type.tensor_type.shape.dim
            if len(dims) == 3 and dims[2].dim_value > BOX_VALUES:
                return int(dims[2].dim_value) - BOX_VALUES
            raise HarnessError(
                f"{OUTPUT_NAME} must be [N, anchors, 4 + classes] with a fixed last dimension"
            )
    raise HarnessError(f"the model has no output {OUTPUT_NAME!r}")


def with_nms(spec: EngineSpec, nms: str) -> EngineSpec:
    """`spec` with the NMS way (nms_ways.py) among its options: each way is an engine of its own."""
    options = dict(spec.options)
    options["nms"] = check_nms(nms)
    return dataclasses.replace(spec, options=tuple(sorted(options.items())))


def check_precision(precision: str) -> None:
    """One line for a precision RetinaNet's torch engine is not built in."""
    if precision not in PRECISIONS:
        raise HarnessError(
            f"RetinaNet's torch engine is built in {', '.join(PRECISIONS)}, not {precision!r}"
        )


def retinanet_torch_engine(
    cache: EngineCache,
    model_sha256: str,
    precision: str,
    batch_size: int,
    model_path: Path,
    nms: str = DEFAULT_NMS,
    calibration: Calibration | None = None,
) -> Path:
    """The engine file for `batch_size`: from the cache by its key, else built now (needs torch
    and the GPU it is for). An fp8 engine is calibrated on `calibration`."""
    check_precision(precision)
    fp8 = precision == fp8_build.PRECISION
    spec = with_nms(
        torch_engine_spec(
            NAME,
            model_sha256,
            precision,
            batch_size,
            calibration=calibration if fp8 else None,
            builder_modules=RETINANET_FP8_BUILDER_MODULES if fp8 else RETINANET_BUILDER_MODULES,
        ),
        nms,
    )

    def builder(out_dir: Path) -> str:
        check_spec_torch(spec)
        if fp8:
            assert calibration is not None  # torch_engine_spec refuses an fp8 spec without one
            key = fp8_calibrate.amax_key(model_sha256, calibration)
            return build_fp8(
                model_path,
                out_dir,
                batch_size,
                spec.device,
                nms,
                calibration,
                amax_cache=cache.root / "calibration" / NAME / f"{key}-fp8.json",
                tuning_kernels=cache.root / FP8_TUNING_KERNELS,
            )
        return build_package(model_path, out_dir, precision, batch_size, spec.device, nms)

    return cache.get_or_build(spec, builder)[0]


def fp8_fp16_convs(model_path: Path) -> tuple[str, ...]:
    """The convolutions RetinaNet's FP8 engine keeps in fp16 (FP8_CLASS_LOGITS_IN_FP16)."""
    return class_logit_convolutions(model_path) if FP8_CLASS_LOGITS_IN_FP16 else ()


def build_fp8(
    model_path: Path,
    out_dir: Path,
    batch_size: int,
    device: str,
    nms: str,
    calibration: Calibration,
    *,
    amax_cache: Path,
    tuning_kernels: Path,
) -> str:
    """The FP8 network (engines/torch_fp8) with the postprocessing appended, built in `out_dir`."""
    model = onnx.load(str(model_path), load_external_data=False)
    classes = head_classes(model)

    def wrap(network: Any) -> Any:
        from mlperf_harness.engines.torch_retinanet.module import RetinaNetEngine

        return RetinaNetEngine(network, classes, nms).cuda().eval()

    return fp8_build.build_fp8_package(
        model_path,
        out_dir,
        batch_size=batch_size,
        device=device,
        calibration=calibration,
        amax_cache=amax_cache,
        tuning_kernels=tuning_kernels,
        fp16_convs=fp8_fp16_convs(model_path),
        body=fp8_build.Fp8Body(
            head_output_names(model), (ENGINE_OUTPUT,), wrap, (NMS_OPERATOR_MODULE,)
        ),
    )


def build_package(
    model_path: Path, out_dir: Path, precision: str, batch_size: int, device: str, nms: str
) -> str:
    model, input_name, shape = aot_build.load_for_build(model_path, batch_size, device)
    classes = head_classes(model)
    # HarnessError without torch
    graph = onnx_to_torch.to_torch_module(model, list(head_output_names(model)))

    from mlperf_harness.engines.torch_aot.torch_module import TORCH_DTYPES, EngineModule
    from mlperf_harness.engines.torch_retinanet.module import RetinaNetEngine

    network = EngineModule(graph, TORCH_DTYPES[precision], True)
    engine = RetinaNetEngine(network, classes, nms).cuda().eval()
    return aot_build.package_module(
        engine,
        shape,
        out_dir,
        input_name=input_name,
        output_names=(ENGINE_OUTPUT,),
        precision=precision,
        channels_last=True,
        max_autotune=False,
        device=device,
    )
