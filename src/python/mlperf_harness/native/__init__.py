"""The harness's hot loops in C++: `mlperf_harness.native._native`, built from src/cpp/harness_native.

The compiled module ships in its own wheel (the `python_distribution` in src/cpp/harness_native),
which Pants builds into every test and PEX that imports this package. The wheel holds only
`mlperf_harness/native/_native.*.so`, installed in a directory of its own on `sys.path`, while this
package lives with the other first-party sources: adding that directory to the package's path lets
the import below find it. (`pkgutil.extend_path` would search the parent package's path, and the
top-level `mlperf_harness` package is not extended.) There is no pure-Python fallback: if the
extension is missing, importing this package fails.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.join("mlperf_harness", "native")
__path__ += [
    directory
    for entry in sys.path
    if (directory := os.path.join(entry or os.curdir, _HERE)) not in __path__
    and os.path.isdir(directory)
]

from mlperf_harness.native._native import (  # noqa: E402 (the path must be extended first)
    Batch,
    BufferPool,
    Completer,
    CudaGraphs,
    DynamicBatcher,
    FixedBatcher,
    InlineRoundTrips,
    NullCompleters,
    TestSettings,
    complete_in_loadgen,
    cuda_driver_error,
    cuda_host_alloc_available,
    gather,
    gather_threads,
    loadgen_test_running,
    loadgen_version,
    memcpy_into,
    quantize_int8_linear,
    run_loadgen_test,
)

__all__ = [
    "Batch",
    "BufferPool",
    "Completer",
    "CudaGraphs",
    "DynamicBatcher",
    "FixedBatcher",
    "InlineRoundTrips",
    "NullCompleters",
    "TestSettings",
    "complete_in_loadgen",
    "cuda_driver_error",
    "cuda_host_alloc_available",
    "gather",
    "gather_threads",
    "loadgen_test_running",
    "loadgen_version",
    "memcpy_into",
    "quantize_int8_linear",
    "run_loadgen_test",
]
