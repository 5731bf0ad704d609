"""Backend names -> runner factories. Factories import their backend lazily so heavy optional
libraries (onnxruntime, torch, tensorrt) load only when that backend is chosen."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.backends.base import Runner
from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class BackendOptions:
    """What a benchmark tells any backend: the model, which output it reads, CPU threads."""

    model_path: Path | None = None
    output_name: str | None = None
    intra_op_threads: int | None = None


def _null(options: BackendOptions) -> Runner:
    from mlperf_harness.backends.null.runner import NullRunner

    return NullRunner()


def _onnxruntime(options: BackendOptions) -> Runner:
    from mlperf_harness.backends.onnxruntime.runner import OnnxRuntimeRunner

    if options.model_path is None:
        raise HarnessError("the onnxruntime backend needs a model (--model_path)")
    return OnnxRuntimeRunner(options.model_path, options.output_name, options.intra_op_threads)


def _tensorrt(options: BackendOptions) -> Runner:
    from mlperf_harness.backends.tensorrt.runner import TensorRTRunner

    if options.model_path is None:
        raise HarnessError("the tensorrt backend needs an engine (generate_engines builds it)")
    return TensorRTRunner(options.model_path, options.output_name)


def _torch(options: BackendOptions) -> Runner:
    from mlperf_harness.backends.torch_cuda.runner import TorchRunner

    if options.model_path is None:
        raise HarnessError(
            "the torch backend needs an engine (a .pt2 that generate_engines builds)"
        )
    return TorchRunner(options.model_path, options.output_name)


_FACTORIES: dict[str, Callable[[BackendOptions], Runner]] = {
    "null": _null,
    "onnxruntime": _onnxruntime,
    "tensorrt": _tensorrt,
    "torch": _torch,
}


def backend_names() -> Sequence[str]:
    return sorted(_FACTORIES)


def check_backend_name(name: str) -> str:
    if name not in _FACTORIES:
        raise HarnessError(f"unknown backend {name!r}: choose one of {', '.join(backend_names())}")
    return name


def create_runner(name: str, options: BackendOptions) -> Runner:
    return _FACTORIES[check_backend_name(name)](options)
