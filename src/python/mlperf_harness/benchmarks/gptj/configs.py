"""GPT-J's settings per scenario and system. Durations, query counts, the Server bound (20 s) and
equal-issue mode are LoadGen's mlperf.conf's; `batch_size` is how many samples the serving loop
decodes together (its slots, each of 4 beams). A run on a system no config times (every CPU)
times its engine at start for the rates (config/measured_rates.py)."""

from __future__ import annotations

from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "gptj"  # its name in mlperf.conf, for gptj-99 and gptj-99.9 alike


class Gptj(BenchmarkConfig):
    backend = "onnxruntime"
    precision = "fp32"
    worker_count = 1  # one serving loop; ONNX Runtime spreads each step over the cores itself


@register(NAME, Scenario.OFFLINE)
class Offline(Gptj):
    batch_size = 8


@register(NAME, Scenario.SERVER)
class Server(Gptj):
    batch_size = 8


@register(NAME, Scenario.SINGLE_STREAM)
class SingleStream(Gptj):
    batch_size = 1


# One NVIDIA H100 or H200: the torch engine in fp16, as many slots as fill the GPU's memory
# (engines/torch_gptj: each slot a sample of 4 beams). The rates are timed at each run's start
# until a measured one is recorded here (docs/gptj.md).
GPU_SYSTEMS = ("H100-SXM-80GBx1", "H200-SXM-141GBx1")

for _system in GPU_SYSTEMS:
    for _scenario, _base in (
        (Scenario.OFFLINE, Offline),
        (Scenario.SERVER, Server),
        (Scenario.SINGLE_STREAM, SingleStream),
    ):

        @register(NAME, _scenario, _system)
        class GPU(_base):  # type: ignore[valid-type,misc]
            backend = "torch"
            precision = "fp16"
            batch_size = None if _scenario is not Scenario.SINGLE_STREAM else 1
