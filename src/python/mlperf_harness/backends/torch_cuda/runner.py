"""Run a torch engine (an AOTInductor package built by engines/torch_aot) on a CUDA GPU.

activate() loads the package (no compilation: its kernels were compiled at build time), allocates
the engine's static input on the GPU and pinned host buffers, warms up and captures one CUDA graph
of a whole batch. infer() copies the batch into pinned memory and on to the GPU in slices (the CPU
copy of one slice overlaps the DMA of the one before), replays the graph, and copies only the chosen
output back. A batch smaller than the engine's is padded (the rows past it are ignored), a larger one
runs in engine-sized chunks.

torch is imported in activate(): it is no dependency of the CPU build; GPU hosts provide it. One
runner serves one thread at a time (a lock guards it); run several runners for concurrency.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.engines.torch_aot.metadata import EngineIO, read_io
from mlperf_harness.errors import HarnessError

# Samples per host->pinned->device slice. Copying straight from the (pageable) numpy array ran at
# ~6 GB/s on the lent H200, against ~25 GB/s into pinned memory plus ~55 GB/s pinned -> GPU.
STAGE_ROWS = 32


def import_torch() -> Any:
    try:
        import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
    except ImportError as error:
        raise HarnessError(
            f"the torch backend needs PyTorch with CUDA, which this Python cannot import ({error})"
        ) from error
    return torch


class _Package:
    """An AOTInductor package's model, called with the input tensor, returning its output list."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __call__(self, x: Any) -> list[Any]:
        # No stream handle: the package runs on the current CUDA stream (and so can be captured).
        outputs: list[Any] = self._loader.run([x])
        return outputs


def load_package(path: Path, device_index: int = 0) -> Any:
    """The compiled model in an AOTInductor package, loaded without compiling anything.

    The package's C++ loader is used directly: torch._inductor.aoti_load_package does the same and
    then, only to warn about a mismatch, probes the CPU's vector ISA by compiling test programs with
    the host C++ compiler, which took 40-50 s in every fresh process on the lent H200 (torch 2.11);
    the runner checks the GPU itself (the engine's io record). Single-threaded mode drops the
    package's own locking, which is what lets CUDA graphs capture it (the runner serialises calls).
    Falls back to aoti_load_package where the loader's constructor differs.
    """
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


class TorchRunner(Runner):
    name = "torch"

    def __init__(
        self,
        engine_path: Path,
        output_name: str | None = None,
        *,
        cuda_graph: bool = True,
        device_index: int = 0,
    ) -> None:
        self._engine_path = engine_path
        self._output_name = output_name
        self._want_graph = cuda_graph
        self._device_index = device_index
        self._lock = threading.Lock()
        self._torch: Any = None
        self._model: Any = None
        self._io: EngineIO | None = None
        self._out_index = 0
        self._stream: Any = None
        self._graph: Any = None
        self._gpu_in: Any = None
        self._gpu_out: Any = None
        self._host_in: Any = None
        self._host_out: Any = None
        self.cuda_graph_error: str | None = None  # why no graph was captured, if none was

    @property
    def io(self) -> EngineIO:
        if self._io is None:
            raise HarnessError("the torch runner is not active")
        return self._io

    @property
    def uses_cuda_graph(self) -> bool:
        return self._graph is not None

    def activate(self) -> None:
        if not self._engine_path.is_file():
            raise HarnessError(f"torch engine not found: {self._engine_path}")
        io = read_io(self._engine_path)
        self._out_index = io.output_index(self._output_name)
        torch = import_torch()
        if not torch.cuda.is_available():
            raise HarnessError("the torch backend needs a CUDA GPU, and torch sees none")
        if str(torch.__version__) != io.torch_version:
            raise HarnessError(
                f"torch engine {self._engine_path} was built with torch {io.torch_version}, "
                f"this host has {torch.__version__}; rebuild it with generate_engines"
            )
        with torch.cuda.device(self._device_index):
            major, minor = torch.cuda.get_device_capability()
            here = f"{torch.cuda.get_device_name()}-sm_{major}{minor}"
            if here != io.device:
                raise HarnessError(
                    f"torch engine {self._engine_path} was built for {io.device}, this GPU is "
                    f"{here}; rebuild it with generate_engines"
                )
            self._torch, self._io = torch, io
            self._model = load_package(self._engine_path, self._device_index)
            self._allocate_and_capture()

    def _allocate_and_capture(self) -> None:
        torch, io = self._torch, self.io
        self._stream = torch.cuda.Stream()
        self._gpu_in = torch.randn(io.input_shape, dtype=torch.float32, device="cuda")
        self._host_in = torch.empty(io.input_shape, dtype=torch.float32, pin_memory=True)
        self._stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self._stream):
            for _ in range(3):  # the first calls load modules and set up cuBLAS/cuDNN handles
                outputs = self._model(self._gpu_in)
        self._stream.synchronize()
        out = outputs[self._out_index]
        self._host_out = torch.empty(out.shape, dtype=out.dtype, pin_memory=True)
        if not self._want_graph:
            return
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=self._stream):
                captured = self._model(self._gpu_in)
            graph.replay()
            self._stream.synchronize()
        except Exception as error:  # capture fails with RuntimeError or CUDA errors of any kind
            self.cuda_graph_error = f"{type(error).__name__}: {str(error).splitlines()[0]}"
            torch.cuda.synchronize()
            return
        self._graph, self._gpu_out = graph, captured[self._out_index]

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        io = self.io
        data = np.ascontiguousarray(batch, dtype=np.float32)
        if data.shape[1:] != io.input_shape[1:]:
            raise HarnessError(
                f"the torch engine takes samples of shape {io.input_shape[1:]}, got {data.shape[1:]}"
            )
        with self._lock:
            chunks = [
                self._run_chunk(data[start : start + io.batch_size])
                for start in range(0, len(data), io.batch_size)
            ]
        if not chunks:
            return np.empty((0, *self._host_out.shape[1:]), dtype=self._host_out.numpy().dtype)
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)

    def _run_chunk(self, chunk: npt.NDArray[np.float32]) -> npt.NDArray[np.generic]:
        torch, count = self._torch, len(chunk)
        source = torch.from_numpy(chunk)
        with torch.cuda.device(self._device_index), torch.cuda.stream(self._stream):
            for start in range(0, count, STAGE_ROWS):
                end = min(start + STAGE_ROWS, count)
                self._host_in[start:end].copy_(source[start:end])
                self._gpu_in[start:end].copy_(self._host_in[start:end], non_blocking=True)
            if self._graph is not None:
                self._graph.replay()
                out = self._gpu_out
            else:
                out = self._model(self._gpu_in)[self._out_index]
            self._host_out[:count].copy_(out[:count], non_blocking=True)
            self._stream.synchronize()
        result: npt.NDArray[np.generic] = self._host_out[:count].numpy().copy()
        return result

    def deactivate(self) -> None:
        if self._torch is not None and self._stream is not None:
            self._stream.synchronize()
        self._graph = self._gpu_out = self._gpu_in = None
        self._host_in = self._host_out = self._model = self._stream = None
        self._io = None
