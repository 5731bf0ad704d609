"""Run torch engines (AOTInductor packages built by engines/torch_aot) on CUDA GPUs.

One `TorchRunner` serves one worker thread on one GPU. `torch_runners` makes `streams_per_gpu` of
them for every visible GPU (NVIDIA's `gpu_inference_streams`): each has its own compute and copy
streams, CUDA graphs and buffers, so while one runner's batch computes, another's is being gathered
and copied, and every GPU is kept busy by whichever worker takes the next batch.

activate() loads each engine package of the runner (a ladder of static batch sizes: a partial batch
runs on the smallest engine that holds it) without compiling anything, allocates one GPU input
buffer of the largest batch and pinned host buffers, warms up and captures one CUDA graph per
engine batch size, all on views of that input buffer. A batch then goes:

- from host samples (`infer_samples` with start_from_device off): the store gathers the samples in
  C++ straight into the pinned input buffer; one DMA on the copy stream; the compute stream waits
  for it, replays the graph and copies back only the chosen output;
- from GPU samples (start_from_device on): the loaded samples were copied to this GPU in
  `samples_loaded`, before timing (one copy per GPU, shared by its runners), and only the sample
  rows (8 bytes each) travel. Each engine gets a second CUDA graph there, a round trip
  (capture_round_trips): the rows' copy from pinned memory, the batch gathered from that GPU copy,
  the engine, and the chosen output's copy back. A batch writes its rows, replays and
  synchronises: no call into torch of its own for the input or the output (each 5-15 us of the
  host's time on an H100 host, a real share of a batch-1 query: query_breakdown.py). An engine
  that can gather its batch itself (the FP8 engine: exported.ExportedEngine.gather) reads the
  samples where they lie; any other takes an index_select into a batch first. Without graphs the
  runner stages the same way in calls of their own (an index_select, or one device-to-device copy
  for a single sample).

On the native LoadGen, SingleStream and MultiStream can skip Python altogether: the harness asks
for `inline_round_trips` and LoadGen's issue thread then writes the rows, launches the same round
trip graphs and completes each query in C++ (native.InlineRoundTrips, harness/round_trip_choice.py).

torch is imported in activate(): it is no dependency of the CPU build; GPU hosts provide it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness import native
from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.devices import spread_over_devices
from mlperf_harness.backends.torch_cuda.affinity import pin_thread_near_gpu
from mlperf_harness.engines.gpu_timing import time_graph
from mlperf_harness.engines.torch_aot.metadata import EngineIO, read_io
from mlperf_harness.engines.torch_aot.torch_host import gpu_count, gpu_device, import_torch
from mlperf_harness.engines.torch_fp8.exported import EXPORTED_FILE, ExportedEngine
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

WARMUP_CALLS = 3  # the first calls load modules and set up cuBLAS/cuDNN handles
_BOUND = threading.local()  # the runner whose GPU and stream a thread has made current


class _Package:
    """An AOTInductor package's model, called with the input tensor, returning its output list."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __call__(self, x: Any) -> list[Any]:
        # No stream handle: the package runs on the current CUDA stream (and so can be captured).
        outputs: list[Any] = self._loader.run([x])
        return outputs


def bind_thread(runner: Runner, torch: Any, device_index: int, stream: Any) -> None:
    """Make `runner`'s GPU and compute stream the calling thread's current ones, once per thread
    (a worker thread serves one runner): the hot path then needs no device or stream context
    managers, each of which costs microseconds of a batch-1 query. A worker thread is also pinned
    to the GPU's NUMA node on hosts of several (affinity.py); the main thread never is: threads it
    starts later (LoadGen's) would inherit the mask."""
    if getattr(_BOUND, "runner", None) is not runner:
        torch.cuda.set_device(device_index)
        torch.cuda.set_stream(stream)
        if threading.current_thread() is not threading.main_thread():
            pin_thread_near_gpu(torch, device_index)
        _BOUND.runner = runner


def load_package(path: Path, device_index: int = 0) -> Any:
    """The compiled model in an AOTInductor package, loaded without compiling anything.

    The package's C++ loader is used directly: torch._inductor.aoti_load_package does the same and
    then, only to warn about a mismatch, probes the CPU's vector ISA by compiling test programs with
    the host C++ compiler, which took 40-50 s in every fresh process on the lent H200 (torch 2.11);
    the runner checks the GPU itself (the engine's io record). Single-threaded mode drops the
    package's own locking, which is what lets CUDA graphs capture it (the runner serialises calls).
    Falls back to aoti_load_package where the loader's constructor differs. The FP8 engine is an
    exported program instead (engines/torch_fp8/exported.py says why), loaded by its file name.
    """
    if path.name == EXPORTED_FILE:
        return ExportedEngine(path, device_index)
    torch = import_torch()
    loader_type = getattr(getattr(torch._C, "_aoti", None), "AOTIModelPackageLoader", None)
    if loader_type is not None:
        try:
            return _Package(loader_type(str(path), "model", True, 1, device_index))
        except TypeError:
            pass  # another signature: let torch's own loader deal with it
    aoti_load_package = importlib.import_module("torch._inductor").aoti_load_package
    try:
        return aoti_load_package(str(path), run_single_threaded=True, device_index=device_index)
    except TypeError:
        return aoti_load_package(str(path))


def check_engine_ladder(ios: Sequence[EngineIO]) -> None:
    """Engines one runner serves together: distinct batch sizes, one sample shape and outputs."""
    sizes = [io.batch_size for io in ios]
    if len(set(sizes)) != len(sizes):
        raise HarnessError(f"torch engines of the same batch size given twice: {sorted(sizes)}")
    first = ios[0]
    for io in ios[1:]:
        if io.input_shape[1:] != first.input_shape[1:] or io.output_names != first.output_names:
            raise HarnessError(
                "torch engines of one runner must take the same samples and give the same outputs"
            )


def read_engine_ladder(paths: Sequence[Path]) -> list[tuple[EngineIO, Path]]:
    """Each engine's io record with its path, ascending batch sizes, checked to serve together."""
    for path in paths:
        if not path.is_file():
            raise HarnessError(f"torch engine not found: {path}")
    ios = sorted(((read_io(path), path) for path in paths), key=lambda pair: pair[0].batch_size)
    check_engine_ladder([io for io, _ in ios])
    return ios


def engine_for(batch_sizes: Sequence[int], count: int) -> int:
    """The position, in ascending `batch_sizes`, of the smallest engine that holds `count` samples
    (the largest engine when none does: the batch then runs in chunks of its size)."""
    for position, size in enumerate(batch_sizes):
        if count <= size:
            return position
    return len(batch_sizes) - 1


class DeviceSamples:
    """One GPU's copy of a store's loaded samples, shared by the runners on that GPU."""

    def __init__(self, device_index: int) -> None:
        self.device_index = device_index
        self._lock = threading.Lock()
        self._source: Any = None  # the host array the copy was made from
        self.data: Any = None  # (loaded samples, ...) on the GPU
        self._rows: tuple[Any, ...] = ()  # each sample's view of `data`, made once

    def row(self, index: int) -> Any:
        return self._rows[index]

    def rows_of(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.int64]:
        """The rows of this GPU's copy that hold the samples at `indices`."""
        loaded = store.loaded_samples()
        if loaded is None or self.data is None:
            raise HarnessError("start_from_device: the store holds no loaded samples")
        rows: npt.NDArray[np.int64] = loaded[1][np.asarray(indices, dtype=np.int64)]
        # The least of a list, not ndarray.min: for a latency query's few rows a quarter of the
        # cost, most of which is the ufunc's dispatch (runner_python_cost.py).
        if len(rows) and min(rows.tolist()) < 0:
            raise HarnessError("LoadGen asked for a sample that was never loaded")
        return rows

    def update(self, torch: Any, store: SampleStore) -> None:
        loaded = store.loaded_samples()
        with self._lock:
            if loaded is None:
                self._source = self.data = None
                self._rows = ()
                return
            data, _slot_of = loaded
            if data is self._source:
                return  # another runner of this GPU has copied this very array already
            self.data, self._rows = None, ()  # give the old copy back before taking memory anew
            try:
                self.data = torch.from_numpy(data).to(f"cuda:{self.device_index}")
            except RuntimeError as error:  # torch.OutOfMemoryError is a RuntimeError
                raise HarnessError(
                    f"start_from_device: {data.nbytes / 2**30:.1f} GiB of samples do not fit on "
                    f"GPU {self.device_index} ({str(error).splitlines()[0]}); "
                    "run with --no-start_from_device"
                ) from error
            torch.cuda.synchronize(self.device_index)
            self._rows = self.data.unbind(0)
            self._source = data


@dataclass
class Engine:
    """One engine of a runner's ladder (its batch size), loaded, and its CUDA graph."""

    batch_size: int
    model: Any  # the loaded package
    graph: Any = None  # its CUDA graph, replayed on a leading view of the runner's input buffer
    output: Any = None  # the graph's (static) chosen output tensor


def run_on_rows(model: Any, samples: Any, rows: Any) -> Any:
    """A loaded engine's outputs for the samples at `rows` of `samples` (a GPU's copy): gathered
    by the engine itself where it can (its input pass reads them where they lie), else by an
    index_select into a batch of its own first."""
    if hasattr(model, "gather"):
        return model.gather(samples, rows)
    return model(samples.index_select(0, rows))


def warm_up_and_capture(
    torch: Any,
    stream: Any,
    engines: Sequence[Engine],
    run: Callable[[Engine], Any],
    *,
    want_graph: bool,
) -> str | None:
    """Run each engine WARMUP_CALLS times on `stream` (modules load, kernels are chosen), then
    capture each in a CUDA graph; `run(engine)` calls it on its input and returns the output the
    runner reads. Sets each engine's output (and graph); returns why no graphs were captured."""
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for engine in engines:
            for _ in range(WARMUP_CALLS):
                engine.output = run(engine)
    stream.synchronize()
    if not want_graph:
        return None
    try:
        for engine in engines:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                output = run(engine)
            graph.replay()
            engine.graph, engine.output = graph, output
        stream.synchronize()
    except Exception as error:  # capture fails with RuntimeError or CUDA errors of any kind
        torch.cuda.synchronize()
        for engine in engines:
            engine.graph = None
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"
    return None


def capture_round_trips(
    torch: Any,
    stream: Any,
    engines: Sequence[Engine],
    samples: Any,
    host_rows: Any,
    gpu_rows: Any,
    host_out: Any,
    out_index: int,
) -> str | None:
    """Capture each of `engines` as one round trip: the rows of `samples` in pinned `host_rows`
    copied to `gpu_rows`, the engine run on the samples at them (run_on_rows), and its chosen
    output copied back into pinned `host_out`, each over the engine's whole batch
    (a partial batch's rows past its own must be rows of `samples`: `host_rows` starts as zeros).
    A batch then only writes its rows, replays and synchronises. The runner and torch_raw both
    time their latency this way. Returns warm_up_and_capture's answer."""
    return warm_up_and_capture(
        torch,
        stream,
        engines,
        lambda engine: round_trip(engine, samples, host_rows, gpu_rows, host_out, out_index),
        want_graph=True,
    )


def round_trip(
    engine: Engine, samples: Any, host_rows: Any, gpu_rows: Any, host_out: Any, out_index: int
) -> Any:
    """What capture_round_trips captures, one call of it: returns the engine's chosen output."""
    size = engine.batch_size
    gpu_rows[:size].copy_(host_rows[:size], non_blocking=True)
    output = run_on_rows(engine.model, samples, gpu_rows[:size])[out_index]
    host_out[:size].copy_(output, non_blocking=True)
    return output


@dataclass(frozen=True)
class _Views:
    """The buffers' views for a batch of `count` samples, made once per count and reused: each
    tensor slice made in Python costs microseconds, a real share of a batch-1 query."""

    count: int
    engine: Engine  # the smallest engine that holds `count`
    gpu_in: Any  # input rows [0, count)
    host_in: Any  # pinned input rows, and the same memory as numpy
    host_in_np: npt.NDArray[np.generic]
    host_rows: Any  # pinned sample rows to gather on the GPU, and as numpy
    host_rows_np: npt.NDArray[np.int64]
    gpu_rows: Any
    host_out: Any  # pinned output rows, and as numpy
    host_out_np: npt.NDArray[np.generic]
    graph_out: Any  # the graph's output rows [0, count); None without a graph
    round_trip: Engine | None  # the engine's round trip on the GPU's samples, if captured


class TorchRunner(Runner):
    name = "torch"

    def __init__(
        self,
        engine_paths: Sequence[Path],
        output_name: str | None = None,
        *,
        cuda_graph: bool = True,
        device_index: int = 0,
        device_samples: DeviceSamples | None = None,
    ) -> None:
        if not engine_paths:
            raise HarnessError("the torch backend needs at least one engine")
        self._engine_paths = tuple(engine_paths)
        self._output_name = output_name
        self._want_graph = cuda_graph
        self.device_index = device_index
        # Set: batches are gathered on the GPU from a copy made when LoadGen loads the samples.
        self._device_samples = device_samples
        self._lock = threading.Lock()
        self._torch: Any = None
        self._io: EngineIO | None = None
        self._engines: list[Engine] = []
        # The same engines, captured as round trips on the GPU's samples (capture_round_trips):
        # made in samples_loaded, empty without graphs or without loaded samples.
        self._round_trips: list[Engine] = []
        # The C++ answer to latency queries (inline_round_trips), bound to the round trips each
        # time they are captured; None unless the harness asked for it.
        self._inline: native.InlineRoundTrips | None = None
        self._out_index = 0
        self._compute: Any = None
        self._copy: Any = None
        self._copied: Any = None  # event: the copy stream's input copy is done
        # Buffers of the largest batch; each engine's graph reads a leading view of the input.
        self._buffers: dict[str, Any] = {}
        self._views: dict[int, _Views] = {}
        self.cuda_graph_error: str | None = None  # why no graph was captured, if none was

    @property
    def io(self) -> EngineIO:
        """The largest engine's interface (the others differ only in batch size)."""
        if self._io is None:
            raise HarnessError("the torch runner is not active")
        return self._io

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        return tuple(engine.batch_size for engine in self._engines)

    @property
    def uses_cuda_graph(self) -> bool:
        return bool(self._engines) and all(engine.graph is not None for engine in self._engines)

    def largest_graph(self) -> Any:
        """The largest engine's captured CUDA graph (replayed alone, it is the engine alone: a
        benchmark's torch_raw times and profiles it)."""
        engine = self._engines[-1] if self._engines else None
        if engine is None or engine.graph is None:
            raise HarnessError("no CUDA graph to time: activate the runner with graphs first")
        return engine.graph

    def graph_milliseconds(self, replays: int) -> float:
        """The largest engine's CUDA graph replayed back to back (time_graph): the engine alone."""
        graph = self.largest_graph()
        with self._torch.cuda.device(self.device_index):
            return time_graph(self._torch, self._compute, graph, replays)

    def activate(self) -> None:
        ios = read_engine_ladder(self._engine_paths)
        largest = ios[-1][0]
        self._out_index = largest.output_index(self._output_name)
        torch = import_torch()
        for io, path in ios:
            check_engine_host(torch, io, path, self.device_index)
        with torch.cuda.device(self.device_index):
            self._torch, self._io = torch, largest
            self._engines = [
                Engine(io.batch_size, load_package(path, self.device_index)) for io, path in ios
            ]
            self._compute, self._copy = torch.cuda.Stream(), torch.cuda.Stream()
            self._copied = torch.cuda.Event()
            # Never zeros: real-looking values keep the warm-up's kernels on their normal paths.
            gpu_in = torch.randn(largest.input_shape, dtype=torch.float32, device="cuda")
            self._buffers = {"gpu_in": gpu_in}
            self._warm_up_and_capture()
            out = self._engines[-1].output
            self._buffers.update(
                host_in=torch.empty(largest.input_shape, dtype=torch.float32, pin_memory=True),
                host_rows=torch.empty(largest.batch_size, dtype=torch.int64, pin_memory=True),
                gpu_rows=torch.empty(largest.batch_size, dtype=torch.int64, device="cuda"),
                host_out=torch.empty(out.shape, dtype=out.dtype, pin_memory=True),
            )

    def _warm_up_and_capture(self) -> None:
        gpu_in, out = self._buffers["gpu_in"], self._out_index
        self.cuda_graph_error = warm_up_and_capture(
            self._torch,
            self._compute,
            self._engines,
            lambda engine: engine.model(gpu_in[: engine.batch_size])[out],
            want_graph=self._want_graph,
        )

    def _views_for(self, count: int) -> _Views:
        views = self._views.get(count)
        if views is None:
            buffers = self._buffers
            position = engine_for(self.batch_sizes, count)
            engine = self._engines[position]
            trip = self._round_trips[position] if self._round_trips else None
            host_in, host_rows = buffers["host_in"][:count], buffers["host_rows"][:count]
            host_out = buffers["host_out"][:count]
            views = _Views(
                count=count,
                engine=engine,
                gpu_in=buffers["gpu_in"][:count],
                host_in=host_in,
                host_in_np=host_in.numpy(),
                host_rows=host_rows,
                host_rows_np=host_rows.numpy(),
                gpu_rows=buffers["gpu_rows"][:count],
                host_out=host_out,
                host_out_np=host_out.numpy(),
                graph_out=None if engine.graph is None else engine.output[:count],
                round_trip=trip,
            )
            self._views[count] = views
        return views

    # Batches ------------------------------------------------------------------------------------
    def samples_loaded(self, store: SampleStore) -> None:
        if self._device_samples is None:
            return
        with self._lock:  # the round trips read the GPU copy that update() may give back
            self._round_trips = []
            self._views.clear()
            if self._inline is not None:
                self._inline.unbind()
        self._device_samples.update(self._torch, store)
        loaded = store.loaded_samples()
        if loaded is None:
            return
        if self.uses_cuda_graph:
            with self._lock, self._torch.cuda.device(self.device_index):
                self._capture_round_trips()
                if self._inline is not None:
                    self._bind_inline(loaded[1])
        elif self._inline is not None:  # asked for before activate() found it had no graphs
            raise HarnessError(
                f"no round trips to launch from C++: no CUDA graphs ({self.cuda_graph_error}); "
                "run with --no-native_round_trips"
            )
        # Warm the path from the GPU's samples at every engine size (its kernels load on first
        # use), here where LoadGen is not timing yet.
        first_rows = np.resize(loaded[1][loaded[1] >= 0][:1], self.io.batch_size)
        for size in self.batch_sizes:
            self._run_rows(first_rows[:size])

    def _capture_round_trips(self) -> None:
        """Capture each engine's round trip (capture_round_trips) on this GPU's samples."""
        samples = self._device_samples
        assert samples is not None
        buffers = self._buffers
        # A partial batch's graph still reads a whole batch of rows: those past the batch must be
        # rows of these samples, and the row buffer may hold any (allocated empty, or filled for
        # an earlier copy).
        buffers["host_rows"].zero_()
        trips = [Engine(engine.batch_size, engine.model) for engine in self._engines]
        error = capture_round_trips(
            self._torch,
            self._compute,
            trips,
            samples.data,
            buffers["host_rows"],
            buffers["gpu_rows"],
            buffers["host_out"],
            self._out_index,
        )
        if error is not None:
            raise HarnessError(f"the engine's round trip CUDA graph was not captured: {error}")
        self._round_trips = trips

    def inline_round_trips(self, label_offset: int) -> native.InlineRoundTrips | None:
        """The round trips, launched from C++ (Runner.inline_round_trips): bound each time
        samples_loaded captures them. None without samples on the GPU or without CUDA graphs."""
        if self._device_samples is None or not self._want_graph:
            return None
        self._inline = native.InlineRoundTrips(label_offset)
        return self._inline

    def _bind_inline(self, slot_of: npt.NDArray[np.int64]) -> None:
        """Bind the C++ answer to the round trips just captured: their buffers (the same pinned
        memory _round_trip uses), the store's sample -> row table, and their graphs."""
        assert self._inline is not None
        trips, buffers = self._round_trips, self._buffers
        self._inline.bind(
            batch_sizes=[trip.batch_size for trip in trips],
            rows=buffers["host_rows"].numpy(),
            outputs=buffers["host_out"].numpy(),
            slot_of=slot_of,
            launch=self._launch_for(trips),
        )

    def _launch_for(self, trips: Sequence[Engine]) -> Any:
        """What launches `trips` from C++: their graphs' execs on the compute stream, in this
        GPU's primary context (the one torch uses)."""
        try:
            execs = [trip.graph.raw_cuda_graph_exec() for trip in trips]
        except (AttributeError, RuntimeError) as error:
            raise HarnessError(
                f"torch {self._torch.__version__} does not hand out its CUDA graphs "
                f"({type(error).__name__}: {str(error).splitlines()[0]}); "
                "run with --no-native_round_trips"
            ) from error
        try:
            return native.CudaGraphs(execs, self._compute.cuda_stream, self.device_index)
        except RuntimeError as error:
            raise HarnessError(f"{error}; run with --no-native_round_trips") from error

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        """Outputs for a host batch (the raw path, and the warm-up): copied in via pinned memory."""
        io = self.io
        data = np.ascontiguousarray(batch, dtype=np.float32)
        if data.shape[1:] != io.input_shape[1:]:
            raise HarnessError(
                f"the torch engine takes samples of shape {io.input_shape[1:]}, got {data.shape[1:]}"
            )

        def stage(start: int, views: _Views) -> None:
            np.copyto(views.host_in_np, data[start : start + views.count])
            self._copy_in(views)

        return self._chunked(len(data), stage)

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        if self._device_samples is not None:
            return self._run_rows(self._device_samples.rows_of(store, indices))

        def stage(start: int, views: _Views) -> None:
            out = views.host_in_np
            gathered = store.gather(indices[start : start + views.count], out=out)
            if gathered is not out:  # a store that cannot write into `out`
                np.copyto(out, gathered)
            self._copy_in(views)

        return self._chunked(len(indices), stage)

    def _run_rows(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.generic]:
        """Outputs for the samples at `rows` of this GPU's copy: through the engines' round trips
        where they were captured, else staged by _select_on_device; an empty batch runs nothing."""
        if not self._round_trips or not len(rows):
            return self._chunked(
                len(rows),
                lambda start, views: self._select_on_device(
                    rows[start : start + views.count], views
                ),
            )
        largest = self.io.batch_size
        with self._lock:
            bind_thread(self, self._torch, self.device_index, self._compute)
            if len(rows) <= largest:  # every latency query: as few Python steps as there can be
                return self._round_trip(rows)
            return np.concatenate(
                [
                    self._round_trip(rows[start : start + largest])
                    for start in range(0, len(rows), largest)
                ]
            )

    def _round_trip(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.generic]:
        """One batch's round trip (capture_round_trips): its rows written into the pinned row
        buffer, the graph replayed (it copies them over and the output back), a synchronisation
        (which also orders the next batch's reuse of the pinned buffers), the output's rows."""
        views = self._views_for(len(rows))
        assert views.round_trip is not None  # samples_loaded captures them before LoadGen times
        views.host_rows_np[:] = rows
        views.round_trip.graph.replay()
        self._compute.synchronize()
        result: npt.NDArray[np.generic] = views.host_out_np.copy()
        return result

    def _chunked(self, count: int, stage: Callable[[int, _Views], None]) -> npt.NDArray[np.generic]:
        """Run `count` samples in batches of at most the largest engine, without the round trips;
        `stage(start, views)` puts samples [start, start + views.count) into the GPU input (ordered
        before the compute stream's work)."""
        largest = self.io.batch_size
        with self._lock:
            bind_thread(self, self._torch, self.device_index, self._compute)
            chunks = []
            for start in range(0, count, largest):
                views = self._views_for(min(largest, count - start))
                stage(start, views)
                chunks.append(self._run_staged(views))
        if not chunks:
            host_out = self._buffers["host_out"]
            return np.empty((0, *host_out.shape[1:]), dtype=host_out.numpy().dtype)
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)

    def _copy_in(self, views: _Views) -> None:
        """Pinned host input rows -> GPU, on the copy stream; the compute stream waits for it."""
        with self._torch.cuda.stream(self._copy):
            views.gpu_in.copy_(views.host_in, non_blocking=True)
            self._copied.record(self._copy)
        self._compute.wait_event(self._copied)

    def _select_on_device(self, rows: npt.NDArray[np.int64], views: _Views) -> None:
        """The samples at `rows` of this GPU's copy -> the input buffer, on the compute stream
        (without round trips: no graphs were captured)."""
        samples = self._device_samples
        assert samples is not None
        if views.count == 1:  # one device-to-device copy
            views.gpu_in.copy_(samples.row(int(rows[0])), non_blocking=True)
            return
        views.host_rows_np[:] = rows[: views.count]
        views.gpu_rows.copy_(views.host_rows, non_blocking=True)
        self._torch.index_select(samples.data, 0, views.gpu_rows, out=views.gpu_in)

    def _run_staged(self, views: _Views) -> npt.NDArray[np.generic]:
        """Run the staged input on its engine (on the thread's current stream, the compute stream)
        and return the chosen output's rows."""
        engine = views.engine
        if engine.graph is not None:
            engine.graph.replay()
            out = views.graph_out
        else:
            gpu_in = self._buffers["gpu_in"][: engine.batch_size]
            out = engine.model(gpu_in)[self._out_index][: views.count]
        views.host_out.copy_(out, non_blocking=True)
        # Also orders the next batch's reuse of the pinned buffers after this one.
        self._compute.synchronize()
        result: npt.NDArray[np.generic] = views.host_out_np.copy()
        return result

    def deactivate(self) -> None:
        if self._torch is not None and self._compute is not None:
            self._compute.synchronize()
        if self._inline is not None:
            self._inline.unbind()  # before the buffers and graphs it points into go
        self._engines, self._round_trips, self._buffers, self._views = [], [], {}, {}
        self._compute = self._copy = self._copied = None
        self._io = None


def check_engine_host(torch: Any, io: EngineIO, path: Path, device_index: int) -> None:
    if str(torch.__version__) != io.torch_version:
        raise HarnessError(
            f"torch engine {path} was built with torch {io.torch_version}, this host has "
            f"{torch.__version__}; rebuild it with generate_engines"
        )
    here = gpu_device(device_index)
    if here != io.device:
        raise HarnessError(
            f"torch engine {path} was built for {io.device}, GPU {device_index} is {here}; "
            "rebuild it with generate_engines"
        )


def torch_runners(
    engine_paths: Sequence[Path],
    output_name: str | None,
    *,
    streams_per_gpu: int,
    start_from_device: bool,
) -> list[Runner]:
    """`streams_per_gpu` runners for every GPU (spread_over_gpus), sharing each GPU's samples."""
    samples = [DeviceSamples(gpu) if start_from_device else None for gpu in range(gpu_count())]
    return spread_over_gpus(
        streams_per_gpu,
        lambda gpu: TorchRunner(
            engine_paths, output_name, device_index=gpu, device_samples=samples[gpu]
        ),
    )


def spread_over_gpus(streams_per_gpu: int, make: Callable[[int], Runner]) -> list[Runner]:
    """`make(gpu)` `streams_per_gpu` times for every GPU torch sees (CUDA_VISIBLE_DEVICES picks
    which), spread as devices.spread_over_devices spreads them."""
    return spread_over_devices(gpu_count(), streams_per_gpu, make)
