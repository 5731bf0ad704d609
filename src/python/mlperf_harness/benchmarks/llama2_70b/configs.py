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
# at each run's start until measured ones are recorded. One H200's are, on the real-size stand-in
# (seeded weights, output lengths forced to a mean of about 294 tokens, as the real data's;
# docs/performance.md, 2026-11-30, a 16-core Xeon host): Offline 7.16 samples/s VALID (2,031
# tokens/s, 99.2% of the engine alone) and Server VALID at a target of 6.3 queries/s (1,779
# tokens/s, TTFT p99 929 ms, TPOT p99 70 ms), both admitting in prefills of up to 8 prompts
# (ADMIT_BATCH: 1,727 tokens/s Offline admitting one at a time); Interactive VALID at a target of
# 1.9 queries/s (558 tokens/s, 1,010 queries, TTFT p99 245 ms, TPOT p99 37.7 ms of 40) with 32
# slots, each prompt admitted at once (its latency bounds want no wait for company) by the static
# prefill (INTERACTIVE_PREFILL: a lone prompt of 64 tokens admitted in 30 ms where the packed
# prefill took 102, 1,024 tokens in 134 ms against 139). Two H200s' Offline (2026-11-29, the same
# query in two calls, admitting one prompt at a time): one engine a GPU 11.7 samples/s VALID (3,374
# tokens/s), one engine tensor parallel over both 11.4 (3,280): each GPU its own engine stays the
# H200 layout. That rate is not recorded: with batched admission two H200s should run faster than
# 11.7 x 1.1, and an Offline query sized on it would end before its minimum duration.
MEASURED_RATES = {
    "H200-SXM-141GBx1": {Scenario.OFFLINE: 7.16, Scenario.SERVER: 6.3, Scenario.INTERACTIVE: 1.9},
}
ADMIT_BATCH = 8  # Offline and Server on GPUs: one prefill for several prompts (scheduler.py)
INTERACTIVE_SLOTS = 32  # a decode step of 32 slots leaves room under the 40 ms TPOT bound
INTERACTIVE_PREFILL = "static"  # each admission one CUDA graph (torch_llama/static_prefill.py)
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
            if _scenario == Scenario.INTERACTIVE:
                batch_size = INTERACTIVE_SLOTS  # the slots of one engine, tensor parallel or not
                prefill = INTERACTIVE_PREFILL
            else:
                admit_batch = ADMIT_BATCH
            if _scenario == Scenario.OFFLINE and _measured is not None:
                offline_expected_qps = _measured
            if _scenario != Scenario.OFFLINE and _measured is not None:
                server_target_qps = _measured
