"""Types of the compiled module (src/cpp/harness_native/src/module.cpp)."""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

_Ints = Sequence[int] | npt.NDArray[np.integer[Any]]

class Batch:
    """Samples that go to the runner together: LoadGen's response ids and their QSL indices."""

    def __init__(self, response_ids: _Ints, sample_indices: _Ints) -> None: ...
    @property
    def response_ids(self) -> list[int]: ...
    @property
    def sample_indices(self) -> list[int]: ...
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...

class FixedBatcher:
    """Cuts each issued query into batches of at most batch_size samples, in issue order; with
    order_keys (one per sample index), a query of more than one batch sorted by key first."""

    def __init__(self, batch_size: int, order_keys: _Ints = ...) -> None: ...
    def put(self, response_ids: _Ints, sample_indices: _Ints) -> None: ...
    def put_queries(self, query_samples: Sequence[Any]) -> None:
        """LoadGen's issue_queries argument (QuerySample objects), read in C++."""
    def next_batch(self) -> Batch | None:
        """Blocks (GIL released) until a batch is ready; None once closed and drained."""
    def close(self) -> None: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def ordered(self) -> bool:
        """Whether queries of more than one batch are sorted by order_keys."""
    @property
    def pending(self) -> int: ...
    def timeline(self) -> dict[str, Any]:
        """What this source recorded of the run (timeline.hpp; read by harness/timeline.py)."""

class DynamicBatcher:
    """Server batching: a batch leaves when full or when its oldest sample has waited timeout_ns;
    with bucket_of (a bucket per sample index), one queue per bucket, each batched alike."""

    def __init__(self, batch_size: int, timeout_ns: int, bucket_of: _Ints = ...) -> None: ...
    def put(self, response_ids: _Ints, sample_indices: _Ints) -> None: ...
    def put_queries(self, query_samples: Sequence[Any]) -> None: ...
    def next_batch(self) -> Batch | None: ...
    def close(self) -> None: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def timeout_ns(self) -> int: ...
    @property
    def buckets(self) -> int: ...
    @property
    def pending(self) -> int: ...
    def timeline(self) -> dict[str, Any]: ...

class Completer:
    """Builds the responses of a whole batch and hands them to `complete` in one call."""

    def __init__(
        self,
        complete: Callable[[list[Any]], object],
        response_type: Callable[..., Any],
        in_place: bool = True,
    ) -> None: ...
    @property
    def mode(self) -> str:
        """ "pooled" (response objects reused, fields written in place) or "constructed"."""
    def complete_batch(self, batch: Batch, outputs: npt.NDArray[Any]) -> None: ...
    def complete(self, response_ids: _Ints, outputs: npt.NDArray[Any]) -> None: ...

class TestSettings:
    """LoadGen's TestSettings of the LoadGen compiled into this module (loadgen/native_run.py):
    mlperf_loadgen.TestSettings' attributes (FIELDS names them all), scenario and mode by name."""

    FIELDS: tuple[str, ...]
    scenario: str  # "SingleStream", "MultiStream", "Server" or "Offline"
    mode: str  # "SubmissionRun", "AccuracyOnly", "PerformanceOnly" or "FindPeakPerformance"
    def __init__(self) -> None: ...
    def FromConfig(self, path: str, model: str, scenario: str, conf_type: int = 1) -> int: ...
    def __getattr__(self, name: str) -> Any: ...
    def __setattr__(self, name: str, value: Any) -> None: ...

def run_loadgen_test(
    settings: TestSettings,
    *,
    log_dir: str,
    audit_config: str,
    batches: FixedBatcher | DynamicBatcher,
    total_count: int,
    performance_count: int,
    load: Callable[[list[int]], object],
    unload: Callable[[list[int]], object],
    after_issue: Callable[[], object] | None = None,
    round_trips: InlineRoundTrips | None = None,
) -> None:
    """One test of the compiled-in LoadGen (GIL released); issued queries go to `batches`, whose
    batches `after_issue` or, in C++, `round_trips` answer on LoadGen's issue thread."""

class CudaGraphs:
    """Captured CUDA graph execs (torch's CUDAGraph.raw_cuda_graph_exec()) launched on `stream` in
    device `device`'s primary context, each waited for; needs libcuda.so.1."""

    def __init__(self, execs: Sequence[int], stream: int, device: int) -> None: ...
    def __len__(self) -> int: ...
    def launch(self, position: int) -> None: ...

def cuda_driver_error() -> str:
    """Why libcuda.so.1 could not be loaded; empty where it was."""

class InlineRoundTrips:
    """Latency queries answered in C++ by a runner's round trip graphs (inline_round_trips.hpp):
    each response the output row's first value, an integer label, less `label_offset`, as int32."""

    def __init__(self, label_offset: int) -> None: ...
    def bind(
        self,
        *,
        batch_sizes: Sequence[int],
        rows: npt.NDArray[np.int64],
        outputs: npt.NDArray[np.int64] | npt.NDArray[np.int32],
        slot_of: npt.NDArray[np.int64],
        launch: CudaGraphs | Callable[[int], object],
    ) -> None: ...
    def unbind(self) -> None: ...
    @property
    def bound(self) -> bool: ...
    @property
    def failure(self) -> str:
        """The first error a batch met (that batch answered empty); empty if none."""

def complete_in_loadgen(
    batch: Batch, outputs: npt.NDArray[Any], row_bytes: _Ints | None = None
) -> None:
    """A batch's responses to the compiled-in LoadGen (a test of run_loadgen_test must run)."""

class NullCompleters:
    """C++ threads answering every batch of `batches` empty until it is closed and drained."""

    def __init__(self, batches: FixedBatcher | DynamicBatcher, threads: int = 1) -> None: ...
    def join(self) -> None:
        """Waits for the threads (after batches.close())."""

def loadgen_version() -> str: ...
def loadgen_test_running() -> bool: ...

class BufferPool:
    """Recycled (optionally CUDA-pinned) batch buffers."""

    def __init__(self, pinned: bool = False, max_cached_bytes: int = ...) -> None: ...
    @property
    def pinned(self) -> bool: ...
    @property
    def cached_bytes(self) -> int: ...
    @property
    def allocated(self) -> int: ...
    @property
    def reused(self) -> int: ...
    def empty(self, shape: Sequence[int], dtype: npt.DTypeLike) -> npt.NDArray[Any]: ...

def cuda_host_alloc_available() -> bool: ...
def gather(
    data: npt.NDArray[Any],
    slot_of: npt.NDArray[np.int64],
    indices: _Ints,
    out: npt.NDArray[Any] | None = None,
    *,
    pool: BufferPool,
    threads: int = 0,
) -> npt.NDArray[Any]: ...
def gather_threads() -> int: ...
def quantize_int8_linear(
    values: npt.NDArray[np.float32], out: npt.NDArray[np.int8] | None = None
) -> npt.NDArray[np.int8]: ...
def memcpy_into(dst: npt.NDArray[Any], src: npt.NDArray[Any]) -> None: ...
