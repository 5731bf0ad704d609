"""Run a serialized TensorRT 10 engine: device buffers for the profile's largest batch, pinned host
staging, one CUDA stream, execute_async_v3.

The engine has one optimization profile (min 1, opt = max = its batch size). TensorRT lets only one
execution context use a profile at a time, so the runner has one context, and `infer` calls from the
harness's worker threads take turns (a lock). A batch larger than the profile's maximum is run in
chunks of at most that size.

Neither `tensorrt` nor cuda-python is imported until `activate`, so this module imports anywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.tensorrt.cuda import Cuda, CudaError, host_array, volume
from mlperf_harness.backends.tensorrt.libraries import import_tensorrt
from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class _Tensor:
    name: str
    dtype: np.dtype[Any]
    max_shape: tuple[int, ...]  # at the profile's largest batch
    device: int  # its device buffer, sized for max_shape

    @property
    def max_nbytes(self) -> int:
        return volume(self.max_shape) * self.dtype.itemsize


def choose_output(outputs: Sequence[str], wanted: str | None, engine_path: Path) -> str:
    """The output the runner returns: the one asked for by name, else the engine's first."""
    if not outputs:
        raise HarnessError(f"TensorRT engine {engine_path} has no outputs")
    if wanted is None:
        return outputs[0]
    if wanted not in outputs:
        raise HarnessError(
            f"TensorRT engine {engine_path} has no output {wanted!r} (it has {', '.join(outputs)})"
        )
    return wanted


def batch_chunks(count: int, max_batch: int) -> list[tuple[int, int]]:
    """(start, stop) of each run of at most `max_batch` samples that together cover `count`."""
    return [(start, min(start + max_batch, count)) for start in range(0, count, max_batch)]


class TensorRTRunner(Runner):
    name = "tensorrt"

    def __init__(self, engine_path: Path, output_name: str | None = None) -> None:
        self._engine_path = engine_path
        self._output_name = output_name
        self._lock = threading.Lock()
        self._cuda: Cuda | None = None
        self._logger: Any = None
        self._runtime: Any = None
        self._engine: Any = None
        self._context: Any = None
        self._stream: Any = None
        self._tensors: dict[str, _Tensor] = {}
        self._input: _Tensor | None = None
        self._output: _Tensor | None = None
        self._host_input = 0  # pinned staging buffers
        self._host_output = 0

    @property
    def max_batch(self) -> int:
        """The largest batch one execution takes (the profile's maximum); 0 before activate."""
        return self._input.max_shape[0] if self._input is not None else 0

    def activate(self) -> None:
        if self._context is not None:
            return
        trt = import_tensorrt()
        cuda = Cuda()
        if not self._engine_path.is_file():
            raise HarnessError(f"TensorRT engine not found: {self._engine_path}")
        self._cuda = cuda
        try:
            self._open(trt, cuda)
        except BaseException:
            self._release()
            raise

    def _open(self, trt: ModuleType, cuda: Cuda) -> None:
        path = self._engine_path
        self._logger = trt.Logger(trt.Logger.WARNING)
        self._runtime = trt.Runtime(self._logger)
        self._engine = self._runtime.deserialize_cuda_engine(path.read_bytes())
        if self._engine is None:
            raise HarnessError(
                f"TensorRT {trt.__version__} cannot load the engine {path} (its log above says why: "
                "usually another TensorRT version or another GPU); rebuild it with generate_engines"
            )
        engine = self._engine
        self._context = engine.create_execution_context()
        if self._context is None:
            raise HarnessError(f"TensorRT cannot create an execution context for {path}")
        context = self._context
        names = [str(engine.get_tensor_name(i)) for i in range(engine.num_io_tensors)]
        inputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        outputs = [n for n in names if n not in inputs]
        if len(inputs) != 1:
            raise HarnessError(
                f"{path}: the tensorrt runner runs engines of one input, not {len(inputs)}"
            )
        output_name = choose_output(outputs, self._output_name, path)
        _minimum, _optimum, maximum = engine.get_tensor_profile_shape(inputs[0], 0)
        if not context.set_input_shape(inputs[0], tuple(maximum)):
            raise HarnessError(f"{path}: TensorRT refuses its own profile's shape {tuple(maximum)}")
        self._stream = cuda.stream_create()
        for name in names:
            # After the input shape is set, every shape here is at the profile's largest batch.
            shape = tuple(int(dim) for dim in context.get_tensor_shape(name))
            if any(dim < 0 for dim in shape):
                raise HarnessError(f"{path}: output {name} has a data-dependent shape {shape}")
            dtype = np.dtype(trt.nptype(engine.get_tensor_dtype(name)))
            tensor = _Tensor(name, dtype, shape, cuda.malloc(volume(shape) * dtype.itemsize))
            self._tensors[name] = tensor
            # The buffers never move, so each tensor's address is set once, here.
            if not context.set_tensor_address(name, tensor.device):
                raise HarnessError(f"{path}: TensorRT refuses the address of tensor {name}")
        self._input, self._output = self._tensors[inputs[0]], self._tensors[output_name]
        self._host_input = cuda.malloc_host(self._input.max_nbytes)
        self._host_output = cuda.malloc_host(self._output.max_nbytes)

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        tensor, output = self._input, self._output
        if tensor is None or output is None:
            raise HarnessError("the tensorrt runner is not active (call activate first)")
        if batch.dtype != tensor.dtype or batch.shape[1:] != tensor.max_shape[1:]:
            raise HarnessError(
                f"the engine's input {tensor.name} takes {tensor.dtype} samples of shape "
                f"{tensor.max_shape[1:]}, not {batch.dtype} {batch.shape[1:]}"
            )
        samples = np.ascontiguousarray(batch)
        with self._lock:
            parts = [
                self._infer_chunk(samples[start:stop])
                for start, stop in batch_chunks(len(samples), self.max_batch)
            ]
        if not parts:
            return np.empty((0, *output.max_shape[1:]), dtype=output.dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _infer_chunk(self, samples: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        cuda, context, stream = self._cuda, self._context, self._stream
        tensor, output = self._input, self._output
        assert cuda is not None and tensor is not None and output is not None
        if not context.set_input_shape(tensor.name, samples.shape):
            raise HarnessError(f"TensorRT refuses input shape {samples.shape} for {tensor.name}")
        np.copyto(host_array(self._host_input, samples.dtype, samples.shape), samples)
        cuda.copy_to_device_async(tensor.device, self._host_input, samples.nbytes, stream)
        if not context.execute_async_v3(int(stream)):
            raise HarnessError(
                f"TensorRT failed to run {self._engine_path} (its log above says why)"
            )
        shape = tuple(int(dim) for dim in context.get_tensor_shape(output.name))
        nbytes = volume(shape) * output.dtype.itemsize
        cuda.copy_to_host_async(self._host_output, output.device, nbytes, stream)
        cuda.stream_synchronize(stream)
        # A copy: the staging buffer is overwritten by the next batch.
        return host_array(self._host_output, output.dtype, shape).copy()

    def deactivate(self) -> None:
        self._release()

    def _release(self) -> None:
        """Free everything activate made, whatever state it got to; report the first failure."""
        cuda, failures = self._cuda, []
        if cuda is not None:
            steps: list[tuple[Any, int | Any]] = []
            if self._stream is not None:
                steps.append((cuda.stream_synchronize, self._stream))  # nothing may still use them
            steps += [(cuda.free, tensor.device) for tensor in self._tensors.values()]
            steps += [(cuda.free_host, p) for p in (self._host_input, self._host_output) if p]
            if self._stream is not None:
                steps.append((cuda.stream_destroy, self._stream))
            for step, argument in steps:
                try:
                    step(argument)
                except CudaError as error:
                    failures.append(error)
        self._tensors, self._input, self._output = {}, None, None
        self._host_input = self._host_output = 0
        self._stream = None
        # The context before the engine, the engine before the runtime that made it.
        self._context = None
        self._engine = None
        self._runtime = None
        self._logger = None
        self._cuda = None
        if failures:
            raise failures[0]
