"""Run 3D-UNet's torch engine on whole volumes on the GPU: windows, blending and argmax on the device.

A sample is a preprocessed CT volume ([1, D, H, W]); the engine (an AOTInductor package, ONNX ->
torch like ResNet-50's) takes a batch of 128³ windows. Where the CPU path moves every window through
the host (benchmarks/unet3d/window_runner.py), here:

- the loaded volumes are copied to each GPU once, when LoadGen loads them (before timing), and
  shared by that GPU's runners;
- a volume's windows (the same grid as the reference: `sliding_window.window_grid`) are copied,
  engine batch by engine batch, into the engines' input buffer on the GPU; one CUDA graph replay
  per batch, on the smallest engine of the ladder (e.g. 1, 2, 4 windows) that holds the batch, so
  a one-window volume does not pay for four;
- each window's logits, weighted by the Gaussian importance map, are added into a [3, D, H, W]
  float32 accumulator on the GPU, the map into a normaliser; the division and the argmax happen
  there too, and only the uint8 labels (one byte a voxel) come back.

torch is imported in activate(): it is no dependency of the CPU build; GPU hosts provide it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.torch_cuda.runner import (
    Engine,
    bind_thread,
    check_engine_host,
    engine_for,
    load_package,
    read_engine_ladder,
    spread_over_gpus,
    warm_up_and_capture,
)
from mlperf_harness.benchmarks.unet3d.sliding_window import (
    CLASSES,
    ROI_SIZE,
    WindowGrid,
    importance_map,
    window_grid,
)
from mlperf_harness.engines.gpu_timing import time_graph
from mlperf_harness.engines.torch_aot.torch_host import gpu_count, import_torch
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.harness.volume_store import VolumeStore


class DeviceVolumes:
    """One GPU's copy of the loaded volumes, shared by the runners on that GPU."""

    def __init__(self, device_index: int) -> None:
        self.device_index = device_index
        self._lock = threading.Lock()
        self._volumes: dict[int, Any] = {}
        self._sources: dict[int, Any] = {}  # the host array each copy was made from

    def get(self, index: int) -> Any | None:
        return self._volumes.get(index)

    def update(self, torch: Any, store: SampleStore) -> None:
        if not isinstance(store, VolumeStore):
            raise HarnessError("the torch volume runner needs a VolumeStore of whole volumes")
        loaded = store.loaded()
        with self._lock:
            for index in [i for i in self._volumes if i not in loaded]:
                del self._volumes[index], self._sources[index]
            for index, volume in loaded.items():
                if self._sources.get(index) is volume:
                    continue  # another runner of this GPU copied it already
                self._volumes[index] = torch.from_numpy(np.ascontiguousarray(volume)).to(
                    f"cuda:{self.device_index}"
                )
                self._sources[index] = volume
            torch.cuda.synchronize(self.device_index)


class VolumeRunner(Runner):
    name = "torch"

    def __init__(
        self,
        engines: Sequence[Path],
        *,
        device_index: int = 0,
        device_volumes: DeviceVolumes | None = None,
        cuda_graph: bool = True,
    ) -> None:
        if not engines:
            raise HarnessError("the torch volume runner needs at least one engine")
        self._engine_paths = tuple(engines)
        self.device_index = device_index
        self._device_volumes = device_volumes
        self._want_graph = cuda_graph
        self._lock = threading.Lock()
        self._torch: Any = None
        self._engines: list[Engine] = []  # ascending batch sizes
        self._input: Any = None  # [largest B, 1, 128, 128, 128] float32: one batch's windows
        self._importance: Any = None  # [128, 128, 128] float32
        self._stream: Any = None
        self.cuda_graph_error: str | None = None

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        return tuple(engine.batch_size for engine in self._engines)

    @property
    def batch_size(self) -> int:
        """The largest engine's: windows per call at most."""
        return self.batch_sizes[-1]

    @property
    def uses_cuda_graph(self) -> bool:
        return bool(self._engines) and all(e.graph is not None for e in self._engines)

    def activate(self) -> None:
        ios = read_engine_ladder(self._engine_paths)
        largest = ios[-1][0]
        if tuple(largest.input_shape[1:]) != (1, ROI_SIZE, ROI_SIZE, ROI_SIZE):
            raise HarnessError(
                f"{ios[-1][1]} takes {largest.input_shape[1:]}, not 3D-UNet's 1 x 128³ windows"
            )
        torch = import_torch()
        for io, path in ios:
            check_engine_host(torch, io, path, self.device_index)
        with torch.cuda.device(self.device_index):
            self._torch = torch
            self._engines = [
                Engine(io.batch_size, load_package(path, self.device_index)) for io, path in ios
            ]
            self._stream = torch.cuda.Stream()
            self._input = torch.randn(largest.input_shape, dtype=torch.float32, device="cuda")
            self._importance = torch.from_numpy(importance_map()).to("cuda")
            self._capture()

    def _capture(self) -> None:
        self.cuda_graph_error = warm_up_and_capture(
            self._torch,
            self._stream,
            self._engines,
            lambda engine: engine.model(self._input[: engine.batch_size])[0],
            want_graph=self._want_graph,
        )

    def samples_loaded(self, store: SampleStore) -> None:
        if self._device_volumes is not None:
            self._device_volumes.update(self._torch, store)

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
        """[N, 1, D, H, W] host volumes -> [N, D * H * W] labels (the raw path and the warm-up)."""
        volumes = np.asarray(batch, dtype=np.float32)
        with self._lock:
            bind_thread(self, self._torch, self.device_index, self._stream)
            rows = [self._segment(self._torch.from_numpy(v).to("cuda")) for v in volumes]
        return np.stack(rows) if rows else np.empty((0, 0), dtype=np.uint8)

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        with self._lock:
            bind_thread(self, self._torch, self.device_index, self._stream)
            rows = []
            for index in indices:
                volume = None if self._device_volumes is None else self._device_volumes.get(index)
                if volume is None:  # not copied to this GPU: from host memory
                    host = store.gather([index])[0]
                    volume = self._torch.from_numpy(np.ascontiguousarray(host)).to("cuda")
                rows.append(self._segment(volume))
        return np.stack(rows) if rows else np.empty((0, 0), dtype=np.uint8)

    def _segment(self, volume: Any) -> npt.NDArray[np.uint8]:
        """A [1, D, H, W] volume on the GPU -> its labels, flattened, on the host."""
        torch = self._torch
        shape = tuple(int(n) for n in volume.shape[1:])
        grid: WindowGrid = window_grid(shape)
        starts = grid.starts()
        logits = torch.zeros((CLASSES, *shape), dtype=torch.float32, device="cuda")
        weights = torch.zeros(shape, dtype=torch.float32, device="cuda")
        for first in range(0, len(starts), self.batch_size):
            chunk = starts[first : first + self.batch_size]
            for slot, start in enumerate(chunk):
                self._input[slot, 0].copy_(volume[(0, *grid.slices(start))])
            output = self._run(self._engines[engine_for(self.batch_sizes, len(chunk))])
            for slot, start in enumerate(chunk):
                where = grid.slices(start)
                logits[(slice(None), *where)].add_(output[slot] * self._importance)
                weights[where].add_(self._importance)
        logits.div_(weights)  # the reference divides each class channel by the one shared map
        labels = logits.argmax(dim=0).to(torch.uint8)
        result: npt.NDArray[np.uint8] = labels.reshape(-1).cpu().numpy()
        return result

    def _run(self, engine: Engine) -> Any:
        if engine.graph is not None:
            engine.graph.replay()
            return engine.output
        return engine.model(self._input[: engine.batch_size])[0]

    def graph_milliseconds(self, replays: int) -> float:
        """The largest engine's graph replayed back to back on its current windows, timed with
        CUDA events: milliseconds per batch of windows (the engine alone, for torch_raw)."""
        torch, graph = self._torch, self._engines[-1].graph
        if graph is None:
            raise HarnessError(f"no CUDA graph was captured: {self.cuda_graph_error}")
        with self._lock:
            return time_graph(torch, self._stream, graph, replays)

    def deactivate(self) -> None:
        if self._stream is not None:
            self._stream.synchronize()
        self._engines = []
        self._input = self._stream = None


def volume_runners(
    engines: Sequence[Path], *, streams_per_gpu: int, start_from_device: bool
) -> list[Runner]:
    """`streams_per_gpu` runners for every GPU (spread_over_gpus), sharing each GPU's volumes."""
    volumes = [DeviceVolumes(gpu) if start_from_device else None for gpu in range(gpu_count())]
    return spread_over_gpus(
        streams_per_gpu,
        lambda gpu: VolumeRunner(engines, device_index=gpu, device_volumes=volumes[gpu]),
    )
