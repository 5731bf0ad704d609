"""RetinaNet's engines for a backend and precision: ONNX Runtime's graph-optimized fp32 model on the
CPU; on GPUs torch packages of the network with its postprocessing (engines/torch_retinanet), one
per batch size of the run's ladder (the null backend needs none: the model is returned)."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.benchmarks.retinanet import configs, resources
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.onnxruntime.engine import onnxruntime_engine, onnxruntime_engine_spec
from mlperf_harness.engines.torch_aot.engine import engine_batch_sizes
from mlperf_harness.engines.torch_retinanet.build import retinanet_torch_engine
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario


def retinanet_engines(
    backend: str,
    precision: str,
    model: resources.ModelChoice,
    engine_root: Path,
    scenario: Scenario,
    batch_size: int,
) -> list[Path]:
    """The engine files of a run, largest batch first (more than one only for torch's Server)."""
    if backend == "null":
        return [model.path]
    cache = EngineCache(engine_root)
    if backend == "torch":
        return [
            retinanet_torch_engine(cache, model.sha256, precision, size, model.path)
            for size in engine_batch_sizes(backend, scenario, batch_size)
        ]
    if backend != "onnxruntime":
        raise HarnessError(f"no {backend} engine builder for {configs.NAME} in this build")
    if precision != "fp32":
        raise HarnessError(f"{configs.NAME} on onnxruntime is fp32 in this build, not {precision}")
    spec = onnxruntime_engine_spec(configs.NAME, model.sha256, precision, None)
    return [onnxruntime_engine(cache, spec, model.path, None)[0]]
