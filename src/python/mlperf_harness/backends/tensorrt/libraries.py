"""TensorRT and cuda-python, imported on demand: nothing needs them until the tensorrt backend is used.

They are imported by name (importlib), not with import statements, so that nothing about them is
resolved where they are absent: mypy needs no stubs, Pants no third-party requirement, and a missing
library is one HarnessError that says what to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from mlperf_harness.errors import HarnessError

# The API used here (explicit batch only, execute_async_v3, memory pools) is TensorRT 10's.
MINIMUM_TENSORRT_MAJOR = 10
# cuda-python's runtime module: its current name first, then the name of releases before 12.6.
CUDART_MODULES = ("cuda.bindings.runtime", "cuda.cudart")


def tensorrt_major(version: str) -> int:
    """The major version in a version string such as "10.3.0.26" (0 when there is none)."""
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def import_tensorrt() -> ModuleType:
    """The `tensorrt` module (TensorRT 10 or later), or a HarnessError saying what is missing."""
    try:
        trt = importlib.import_module("tensorrt")
    except (ImportError, OSError) as error:  # OSError: the package is there, its libraries are not
        raise HarnessError(
            f"the tensorrt backend needs TensorRT {MINIMUM_TENSORRT_MAJOR} and its Python package "
            f"`tensorrt`, which cannot be imported here ({error}); install TensorRT on the GPU host, "
            "or choose another backend"
        ) from error
    version = str(getattr(trt, "__version__", "unknown"))
    if tensorrt_major(version) < MINIMUM_TENSORRT_MAJOR:
        raise HarnessError(
            f"the tensorrt backend needs TensorRT {MINIMUM_TENSORRT_MAJOR} or later, found {version}"
        )
    return trt


def tensorrt_version() -> str:
    """The installed TensorRT's version, e.g. "10.3.0" (a HarnessError when there is none)."""
    return str(import_tensorrt().__version__)


def import_cudart() -> ModuleType:
    """cuda-python's CUDA runtime module, or a HarnessError saying what is missing."""
    problems = []
    for name in CUDART_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError as error:
            problems.append(f"{name}: {error}")
    raise HarnessError(
        "the tensorrt backend needs cuda-python (`pip install cuda-python`, the release for the CUDA "
        f"version TensorRT was built with), which cannot be imported here ({'; '.join(problems)})"
    )
