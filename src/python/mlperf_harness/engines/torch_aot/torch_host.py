"""This host's torch and GPUs, as the torch engines' builder, their runner and the device tools see
them. torch is imported on call: CPU hosts import this module (for engine keys) without it."""

from __future__ import annotations

import importlib
import os
from typing import Any

from mlperf_harness.errors import HarnessError

NO_GPU = "the torch backend needs a CUDA GPU, and torch sees none"


def import_torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError as error:
        raise HarnessError(
            f"the torch backend needs PyTorch with CUDA, which this Python cannot import ({error})"
        ) from error


def torch_version() -> str:
    return str(import_torch().__version__)


def gpu_count() -> int:
    """The GPUs torch sees (CUDA_VISIBLE_DEVICES picks which); none is an error."""
    torch = import_torch()
    count = int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    if count == 0:
        raise HarnessError(NO_GPU)
    return count


def gpu_device(device_index: int = 0) -> str:
    """A GPU as engines are built for and checked against: its name and compute capability."""
    torch = import_torch()
    if not torch.cuda.is_available():
        raise HarnessError(NO_GPU)
    major, minor = torch.cuda.get_device_capability(device_index)
    return f"{torch.cuda.get_device_name(device_index)}-sm_{major}{minor}"


def triton_runs_on(device: Any) -> bool:
    """Whether Triton kernels run for `device`: a GPU, or on the CPU Triton's interpreter, which
    TRITON_INTERPRET=1 turns on (elsewhere each kernel's torch reference runs, or the way that
    needs it is refused)."""
    return (
        getattr(device, "type", str(device)) == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"
    )
