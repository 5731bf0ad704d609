"""The tensorrt backend's CUDA calls on a real GPU through the real cuda-python (no TensorRT needed).

Skipped where cuda-python or a CUDA device is missing, as in CI: these run on GPU hosts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest

from mlperf_harness.backends.tensorrt import cuda as cuda_module
from mlperf_harness.backends.tensorrt.cuda import Cuda, CudaError, gpu_device_label, host_array
from mlperf_harness.errors import HarnessError


def _cuda_or_none() -> Cuda | None:
    try:
        cuda = Cuda()
        count = cuda.rt.cudaGetDeviceCount()
    except HarnessError:
        return None
    return cuda if int(getattr(count[0], "value", count[0])) == 0 and count[1] > 0 else None


pytestmark = pytest.mark.skipif(_cuda_or_none() is None, reason="needs cuda-python and a CUDA GPU")


@pytest.fixture
def cuda() -> Iterator[Cuda]:
    found = _cuda_or_none()
    assert found is not None
    yield found


def test_round_trip_through_pinned_memory_and_a_stream(cuda: Cuda) -> None:
    data = np.random.default_rng(0).random((64, 3, 8, 8), dtype=np.float32)
    back = np.zeros_like(data)
    stream = cuda.stream_create()
    assert isinstance(int(stream), int)  # what execute_async_v3 is given
    device = cuda.malloc(data.nbytes)
    pinned_in, pinned_out = cuda.malloc_host(data.nbytes), cuda.malloc_host(data.nbytes)
    try:
        np.copyto(host_array(pinned_in, data.dtype, data.shape), data)
        cuda.copy_to_device_async(device, pinned_in, data.nbytes, stream)
        cuda.copy_to_host_async(pinned_out, device, data.nbytes, stream)
        cuda.stream_synchronize(stream)
        np.copyto(back, host_array(pinned_out, data.dtype, data.shape))
        np.testing.assert_array_equal(back, data)
        # The synchronous copy the calibrator uses, from ordinary (pageable) memory.
        cuda.copy_to_device(device, data[::-1].copy())
        cuda.copy_to_host_async(pinned_out, device, data.nbytes, stream)
        cuda.stream_synchronize(stream)
        np.testing.assert_array_equal(host_array(pinned_out, data.dtype, data.shape), data[::-1])
    finally:
        cuda.free(device)
        cuda.free_host(pinned_in)
        cuda.free_host(pinned_out)
        cuda.stream_destroy(stream)


def test_a_failed_call_is_a_cuda_error_naming_it(cuda: Cuda) -> None:
    with pytest.raises(CudaError, match=r"cudaMalloc\(\d+\) failed: cudaErrorMemoryAllocation"):
        cuda.malloc(1 << 60)
    with pytest.raises(CudaError, match="cudaFree failed"):
        cuda.free(12345)  # not an allocation


def test_device_label_names_the_gpu_and_its_compute_capability(cuda: Cuda) -> None:
    label = cuda.device_label()
    assert re.fullmatch(r"\S.* sm_\d{2,3}", label), label
    assert gpu_device_label() == label
    # NVML (the fallback without cuda-python) names the same GPU the same way.
    assert cuda_module._nvml_device_label() == label
