"""Llama2-70B's settings per scenario and system. Durations, query counts, the token latency bounds
(Server: TTFT 2 s, TPOT 200 ms) and equal-issue mode are LoadGen's mlperf.conf's; `batch_size` is
how many samples the serving loop decodes together (its slots). A run on a system no config times
(every CPU) times its engine at start for the rates (config/measured_rates.py)."""

from __future__ import annotations

from mlperf_harness.config.registry import BenchmarkConfig, register
from mlperf_harness.loadgen.settings import Scenario

NAME = "llama2-70b"  # its name in mlperf.conf, for llama2-70b-99 and -99.9 alike


class Llama2(BenchmarkConfig):
    backend = "onnxruntime"
    precision = "fp32"
    worker_count = 1  # one serving loop; ONNX Runtime spreads each step over the cores itself


@register(NAME, Scenario.OFFLINE)
class Offline(Llama2):
    batch_size = 8


@register(NAME, Scenario.SERVER)
class Server(Llama2):
    batch_size = 8


# LoadGen's Server under mlperf.conf's llama2-70b-interactive (TTFT 450 ms, TPOT 40 ms).
@register(NAME, Scenario.INTERACTIVE)
class Interactive(Llama2):
    batch_size = 8


# One NVIDIA H200 holds the FP8 model (70 GB) and its cache: one engine per GPU. An H100's 80 GB
# leaves almost nothing beside it: two H100s hold one engine tensor parallel (engines/torch_llama,
# NVIDIA's layout), and a host of four or eight runs two or four such groups. The rates are timed
# at each run's start until measured ones are recorded: one H200's Offline and Server are, on the
# real-size stand-in (seeded weights, output lengths forced to a mean of about 294 tokens, as the
# real data's; docs/performance.md, 2026-11-29): Offline 6.04 samples/s VALID (1,727 tokens/s),
# Server VALID at a target of 5.4 queries/s (TTFT p99 348 ms, TPOT p99 98 ms); Interactive not yet.
# Two H200s' Offline (2026-11-29, the same query in two calls): one engine a GPU 11.7 samples/s
# VALID (3,374 tokens/s), one engine tensor parallel over both 11.4 (3,280): each GPU its own
# engine stays the H200 layout.
MEASURED_RATES = {
    "H200-SXM-141GBx1": {Scenario.OFFLINE: 6.04, Scenario.SERVER: 5.4},
    "H200-SXM-141GBx2": {Scenario.OFFLINE: 11.7},
}
TENSOR_PARALLEL = {
    **{f"H200-SXM-141GBx{count}": 1 for count in (1, 2, 4, 8)},
    **{f"H100-SXM-80GBx{count}": 2 for count in (2, 4, 8)},
}

for _system, _tensor_parallel in TENSOR_PARALLEL.items():
    for _scenario, _base in (
        (Scenario.OFFLINE, Offline),
        (Scenario.SERVER, Server),
        (Scenario.INTERACTIVE, Interactive),
    ):
        _measured = MEASURED_RATES.get(_system, {}).get(_scenario)

        @register(NAME, _scenario, _system)
        class GPU(_base):  # type: ignore[valid-type,misc]
            backend = "torch"
            precision = "fp8"
            batch_size = None
            tensor_parallel = _tensor_parallel
            if _scenario == Scenario.OFFLINE and _measured is not None:
                offline_expected_qps = _measured
            if _scenario == Scenario.SERVER and _measured is not None:
                server_target_qps = _measured
