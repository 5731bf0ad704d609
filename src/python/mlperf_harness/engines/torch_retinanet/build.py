"""Build RetinaNet's torch engine: the ONNX model through the shared converter, its GPU
postprocessing appended (module.py), exported and compiled by AOTInductor into a package the shared
runner (backends/torch_cuda/runner.py) loads, replays under CUDA graphs and reads `detections` from.

Keyed like every torch engine (engines/torch_aot/engine.py), with this package's code and the
postprocessing's constants in the key. torch is imported inside the functions: CPU hosts import
this module for keys and the benchmark's wiring without it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import onnx

from mlperf_harness.benchmarks.retinanet.detections import BOX_VALUES
from mlperf_harness.benchmarks.retinanet.engine_detections import ENGINE_OUTPUT
from mlperf_harness.benchmarks.retinanet.stand_in_model import OUTPUT_NAME
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.spec import EngineSpec
from mlperf_harness.engines.torch_aot import build as aot_build
from mlperf_harness.engines.torch_aot import onnx_to_torch
from mlperf_harness.engines.torch_aot.engine import (
    BUILDER_MODULES,
    check_spec_torch,
    torch_engine_spec,
)
from mlperf_harness.engines.torch_retinanet.nms_ways import DEFAULT_NMS, check_nms
from mlperf_harness.errors import HarnessError

NAME = "retinanet"
PRECISIONS = ("fp16", "fp32")  # fp8 (#15's kernels) is not wired for RetinaNet yet
RETINANET_BUILDER_MODULES = (
    *BUILDER_MODULES,
    "mlperf_harness.engines.torch_retinanet.build",
    "mlperf_harness.engines.torch_retinanet.module",
    "mlperf_harness.engines.torch_retinanet.postprocess",
    "mlperf_harness.engines.torch_retinanet.nms_kernel",
    "mlperf_harness.engines.torch_retinanet.nms_op",
    "mlperf_harness.engines.torch_retinanet.nms_ways",
    "mlperf_harness.benchmarks.retinanet.anchors",
    "mlperf_harness.benchmarks.retinanet.detections",
    "mlperf_harness.benchmarks.retinanet.engine_detections",
)


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


def retinanet_torch_engine(
    cache: EngineCache,
    model_sha256: str,
    precision: str,
    batch_size: int,
    model_path: Path,
    nms: str = DEFAULT_NMS,
) -> Path:
    """The engine file for `batch_size`: from the cache by its key, else built now (needs torch
    and the GPU it is for)."""
    if precision not in PRECISIONS:
        raise HarnessError(
            f"RetinaNet's torch engine is built in {' or '.join(PRECISIONS)}, not {precision!r}"
        )
    spec = with_nms(
        torch_engine_spec(
            NAME, model_sha256, precision, batch_size, builder_modules=RETINANET_BUILDER_MODULES
        ),
        nms,
    )

    def builder(out_dir: Path) -> str:
        check_spec_torch(spec)
        return build_package(model_path, out_dir, precision, batch_size, spec.device, nms)

    return cache.get_or_build(spec, builder)[0]


def build_package(
    model_path: Path, out_dir: Path, precision: str, batch_size: int, device: str, nms: str
) -> str:
    model, input_name, shape = aot_build.load_for_build(model_path, batch_size, device)
    classes = head_classes(model)
    graph = onnx_to_torch.to_torch_module(model, [OUTPUT_NAME])  # HarnessError without torch

    from mlperf_harness.engines.torch_aot.torch_module import TORCH_DTYPES
    from mlperf_harness.engines.torch_retinanet.module import RetinaNetEngine

    engine = RetinaNetEngine(graph, TORCH_DTYPES[precision], True, classes, nms).cuda().eval()
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
