"""The few CUDA runtime calls the tensorrt backend makes, through cuda-python, each one checked.

cuda-python returns `(error, *values)` from every call instead of raising: `cuda_call` turns a failed
call into a CudaError naming the call and CUDA's name for the error, and returns the values.
"""

from __future__ import annotations

import ctypes
import math
import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.tensorrt.libraries import import_cudart
from mlperf_harness.errors import HarnessError


class CudaError(HarnessError):
    """A CUDA runtime call failed (out of memory, no device, a bad argument, ...)."""


def cuda_call(what: str, result: Any) -> Any:
    """The value of a cuda-python call's `(error, *values)` result: None, one value or a tuple.

    A failed call raises a CudaError: `what` names the call, and CUDA names the error.
    """
    items: tuple[Any, ...] = result if isinstance(result, tuple) else (result,)
    error, values = items[0], items[1:]
    code = int(getattr(error, "value", error))
    if code != 0:
        name = getattr(error, "name", None) or f"error {code}"
        raise CudaError(f"CUDA {what} failed: {name} ({code})")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def volume(shape: Sequence[int]) -> int:
    return math.prod(int(dim) for dim in shape)


def host_array(pointer: int, dtype: npt.DTypeLike, shape: Sequence[int]) -> npt.NDArray[Any]:
    """A NumPy view (no copy) of host memory at `pointer`, e.g. a pinned staging buffer."""
    dtype = np.dtype(dtype)
    count = volume(shape)
    raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(pointer)
    return np.frombuffer(memoryview(raw), dtype=dtype, count=count).reshape(tuple(shape))


def device_label(name: str | bytes, major: int, minor: int) -> str:
    """How an engine's target GPU is written in its spec: its name and compute capability."""
    if isinstance(name, bytes):
        name = name.split(b"\0", 1)[0].decode(errors="replace")
    return f"{name.strip()} sm_{major}{minor}"


class Cuda:
    """The CUDA runtime calls of the tensorrt backend: allocation, copies, streams, the device."""

    def __init__(self, cudart: ModuleType | None = None) -> None:
        self.rt = cudart if cudart is not None else import_cudart()

    def malloc(self, nbytes: int) -> int:
        return int(cuda_call(f"cudaMalloc({nbytes})", self.rt.cudaMalloc(max(nbytes, 1))))

    def free(self, pointer: int) -> None:
        cuda_call("cudaFree", self.rt.cudaFree(pointer))

    def malloc_host(self, nbytes: int) -> int:
        """Pinned (page-locked) host memory: copies from it can run asynchronously."""
        return int(cuda_call(f"cudaMallocHost({nbytes})", self.rt.cudaMallocHost(max(nbytes, 1))))

    def free_host(self, pointer: int) -> None:
        cuda_call("cudaFreeHost", self.rt.cudaFreeHost(pointer))

    def stream_create(self) -> Any:
        return cuda_call("cudaStreamCreate", self.rt.cudaStreamCreate())

    def stream_destroy(self, stream: Any) -> None:
        cuda_call("cudaStreamDestroy", self.rt.cudaStreamDestroy(stream))

    def stream_synchronize(self, stream: Any) -> None:
        cuda_call("cudaStreamSynchronize", self.rt.cudaStreamSynchronize(stream))

    def copy_to_device_async(self, device: int, host: int, nbytes: int, stream: Any) -> None:
        kind = self.rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        cuda_call(
            "cudaMemcpyAsync (to device)",
            self.rt.cudaMemcpyAsync(device, host, nbytes, kind, stream),
        )

    def copy_to_host_async(self, host: int, device: int, nbytes: int, stream: Any) -> None:
        kind = self.rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
        cuda_call(
            "cudaMemcpyAsync (to host)", self.rt.cudaMemcpyAsync(host, device, nbytes, kind, stream)
        )

    def copy_to_device(self, device: int, array: npt.NDArray[Any]) -> None:
        """A synchronous copy of a contiguous host array (calibration batches: not on a hot path)."""
        array = np.ascontiguousarray(array)
        kind = self.rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        cuda_call(
            "cudaMemcpy (to device)",
            self.rt.cudaMemcpy(device, array.ctypes.data, array.nbytes, kind),
        )

    def device_label(self) -> str:
        """The current device as `device_label` writes it, e.g. "NVIDIA H100 80GB HBM3 sm_90"."""
        device = int(cuda_call("cudaGetDevice", self.rt.cudaGetDevice()))
        properties = cuda_call("cudaGetDeviceProperties", self.rt.cudaGetDeviceProperties(device))
        return device_label(properties.name, int(properties.major), int(properties.minor))


class _NvmlError(Exception):
    pass


def _nvml_device_label() -> str:
    """The first visible GPU from NVML (through ctypes: only the driver is needed)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
    if not visible.isdigit():
        raise _NvmlError(f"CUDA_VISIBLE_DEVICES names {visible!r}, not an index")
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as error:
        raise _NvmlError("no NVIDIA driver (libnvidia-ml.so.1)") from error
    if nvml.nvmlInit_v2() != 0:
        raise _NvmlError("nvmlInit failed")
    try:
        handle = ctypes.c_void_p()
        if nvml.nvmlDeviceGetHandleByIndex_v2(int(visible), ctypes.byref(handle)) != 0:
            raise _NvmlError(f"no GPU {visible}")
        name = ctypes.create_string_buffer(96)
        major, minor = ctypes.c_int(), ctypes.c_int()
        if nvml.nvmlDeviceGetName(handle, name, 96) != 0 or (
            nvml.nvmlDeviceGetCudaComputeCapability(
                handle, ctypes.byref(major), ctypes.byref(minor)
            )
            != 0
        ):
            raise _NvmlError(f"cannot read GPU {visible}'s name or compute capability")
        return device_label(name.value, major.value, minor.value)
    finally:
        nvml.nvmlShutdown()


def gpu_device_label() -> str:
    """The GPU an engine built here is for: from cuda-python, else from NVML."""
    try:
        cuda = Cuda()
    except HarnessError as no_cuda_python:
        try:
            return _nvml_device_label()
        except _NvmlError as error:
            raise HarnessError(
                f"cannot tell which GPU a TensorRT engine is for: {no_cuda_python}; NVML: {error}"
            ) from error
    return cuda.device_label()
