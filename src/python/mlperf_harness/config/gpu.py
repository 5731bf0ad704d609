"""The settings every benchmark's GPU configs start from: the torch backend in fp16 with the loaded
samples held in GPU memory (what NVIDIA's harness does on its GPUs). A benchmark's config for a GPU
system derives from this and from its own scenario config (`class OfflineGPU(TorchOnGPU, Offline)`),
and may pick another precision (ResNet-50's run its FP8 engine)."""

from __future__ import annotations

from mlperf_harness.config.registry import BenchmarkConfig


class TorchOnGPU(BenchmarkConfig):
    backend = "torch"
    precision = "fp16"
    start_from_device = True
