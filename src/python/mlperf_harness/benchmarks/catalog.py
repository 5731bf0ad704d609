"""Every benchmark by name, imported only when asked for (a benchmark's module pulls in its model
tooling). A new benchmark adds one line here."""

from __future__ import annotations

from collections.abc import Callable

from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.errors import HarnessError


def _resnet50() -> Benchmark:
    from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK

    return BENCHMARK


def _bert() -> Benchmark:
    from mlperf_harness.benchmarks.bert.benchmark import BENCHMARK

    return BENCHMARK


def _unet3d() -> Benchmark:
    from mlperf_harness.benchmarks.unet3d.benchmark import BENCHMARK

    return BENCHMARK


def _gptj() -> Benchmark:
    from mlperf_harness.benchmarks.gptj.benchmark import BENCHMARK

    return BENCHMARK


def _llama2_70b() -> Benchmark:
    from mlperf_harness.benchmarks.llama2_70b.benchmark import BENCHMARK

    return BENCHMARK


def _dlrm_v2() -> Benchmark:
    from mlperf_harness.benchmarks.dlrm_v2.benchmark import BENCHMARK

    return BENCHMARK


def _retinanet() -> Benchmark:
    from mlperf_harness.benchmarks.retinanet.benchmark import BENCHMARK

    return BENCHMARK


def _sdxl() -> Benchmark:
    from mlperf_harness.benchmarks.sdxl.benchmark import BENCHMARK

    return BENCHMARK


def _rnnt() -> Benchmark:
    from mlperf_harness.benchmarks.rnnt.benchmark import BENCHMARK

    return BENCHMARK


def _harness_overhead() -> Benchmark:
    from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK

    return BENCHMARK


_BENCHMARKS: dict[str, Callable[[], Benchmark]] = {
    "resnet50": _resnet50,
    "bert": _bert,
    "3d-unet": _unet3d,
    "gptj": _gptj,
    "llama2-70b": _llama2_70b,
    "dlrm-v2": _dlrm_v2,
    "retinanet": _retinanet,
    "stable-diffusion-xl": _sdxl,
    "rnnt": _rnnt,
    "harness_overhead": _harness_overhead,
}


def benchmark_names() -> tuple[str, ...]:
    return tuple(_BENCHMARKS)


def load_benchmark(name: str) -> Benchmark:
    try:
        factory = _BENCHMARKS[name]
    except KeyError:
        known = ", ".join(_BENCHMARKS)
        raise HarnessError(f"unknown benchmark {name!r}: choose from {known}") from None
    return factory()
