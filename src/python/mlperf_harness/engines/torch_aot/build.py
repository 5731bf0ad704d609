"""Build a torch engine: ONNX -> torch module -> torch.export -> AOTInductor package (.pt2).

The package holds kernels compiled for the GPU present and the weights in the engine's precision; a
runner loads it without compiling anything. The engine computes at one static batch size (the
runner pads a smaller batch), in fp32, fp16 or bf16, optionally in channels-last layout; its input
stays the ONNX model's fp32 (the cast happens on the GPU) and float outputs come back in fp32.

torch is imported inside the functions: CPU hosts import this module (for engine keys) without it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from mlperf_harness.engines.torch_aot import onnx_to_torch
from mlperf_harness.engines.torch_aot.metadata import EngineIO, write_io
from mlperf_harness.engines.torch_aot.torch_host import gpu_device, import_torch
from mlperf_harness.errors import HarnessError

PACKAGE_FILE = "model.pt2"
PRECISIONS = ("fp32", "fp16", "bf16")
MIN_TORCH = (2, 6)  # torch._inductor.aoti_compile_and_package and aoti_load_package


def _check_torch_version(version: str) -> None:
    numbers = tuple(int(part) for part in version.split("+")[0].split(".")[:2] if part.isdigit())
    if numbers < MIN_TORCH:
        raise HarnessError(
            f"torch {version} cannot build AOTInductor packages; the torch backend needs "
            f"{'.'.join(map(str, MIN_TORCH))} or later"
        )


def build_package(
    model_path: Path,
    out_dir: Path,
    *,
    precision: str,
    batch_size: int,
    channels_last: bool,
    max_autotune: bool,
    device: str,
) -> str:
    """Compile `model_path` into `out_dir / PACKAGE_FILE` (and its io record); return the file name."""
    if precision not in PRECISIONS:
        raise HarnessError(f"the torch backend builds {', '.join(PRECISIONS)}, not {precision!r}")
    model, input_name, shape = load_for_build(model_path, batch_size, device)

    from mlperf_harness.engines.torch_aot import torch_module

    graph = onnx_to_torch.to_torch_module(model)
    dtype = torch_module.TORCH_DTYPES[precision]
    engine = torch_module.EngineModule(graph, dtype, channels_last).cuda().eval()
    return package_module(
        engine,
        shape,
        out_dir,
        input_name=input_name,
        output_names=tuple(graph.output_names),
        precision=precision,
        channels_last=channels_last,
        max_autotune=max_autotune,
        device=device,
    )


def load_for_build(
    model_path: Path, batch_size: int, device: str
) -> tuple[Any, str, tuple[int, ...]]:
    """(the model, batch norms folded; its input's name; its input shape at `batch_size`), after
    checking that this host's torch and GPU can build the engine and that the model has one fp32
    input."""
    torch = import_torch()
    _check_torch_version(str(torch.__version__))
    here = gpu_device()
    if here != device:
        raise HarnessError(f"this engine is for {device}, but this host's GPU is {here}")
    model = onnx_to_torch.load_model(model_path)
    inputs = onnx_to_torch.graph_inputs(model)
    if len(inputs) != 1:
        raise HarnessError(
            f"the torch engine takes models of one input, this one has {len(inputs)}"
        )
    elem_type = inputs[0].type.tensor_type.elem_type
    if elem_type != 1:  # TensorProto.FLOAT
        raise HarnessError(f"the torch engine takes a float32 input, not ONNX type {elem_type}")
    return model, inputs[0].name, onnx_to_torch.input_shape(inputs[0], batch_size)


def package_module(
    engine: Any,
    shape: tuple[int, ...],
    out_dir: Path,
    *,
    input_name: str,
    output_names: tuple[str, ...],
    precision: str,
    channels_last: bool,
    max_autotune: bool,
    device: str,
) -> str:
    """Export `engine` (a CUDA module of one fp32 input of `shape`) and compile it with AOTInductor
    into `out_dir / PACKAGE_FILE`, with its io record; return the file name."""
    torch = import_torch()
    example = torch.randn(shape, device="cuda")
    with torch.no_grad():
        outputs = engine(example)  # a check that the graph runs, and the outputs' dtypes
        exported = torch.export.export(engine, (example,), strict=False)
    inductor = importlib.import_module("torch._inductor")
    package = out_dir / PACKAGE_FILE
    inductor.aoti_compile_and_package(
        exported,
        package_path=str(package),
        inductor_configs={"max_autotune": max_autotune},
    )
    if not package.is_file():
        raise HarnessError(f"AOTInductor reported success but wrote no {package}")
    write_io(
        package,
        engine_io(
            shape,
            outputs,
            input_name=input_name,
            output_names=output_names,
            precision=precision,
            channels_last=channels_last,
            device=device,
        ),
    )
    return PACKAGE_FILE


def engine_io(
    shape: tuple[int, ...],
    outputs: Any,
    *,
    input_name: str,
    output_names: tuple[str, ...],
    precision: str,
    channels_last: bool,
    device: str,
) -> EngineIO:
    """The io record of an engine whose example run gave `outputs`."""
    return EngineIO(
        input_name=input_name,
        input_shape=shape,
        input_dtype="float32",
        output_names=output_names,
        output_dtypes=tuple(str(o.dtype).removeprefix("torch.") for o in outputs),
        precision=precision,
        channels_last=channels_last,
        torch_version=str(import_torch().__version__),
        device=device,
    )
