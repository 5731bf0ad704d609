"""How long a simulated GPU takes for a batch: a table of batch size -> device time, measured on a
real engine, interpolated between its rows.

A table is a preset (named below, its figures cited from docs/performance.md) or a JSON file:

    {"source": "what was measured, where, when", "reference_system": "H200-SXM-141GBx1",
     "latency_ms": {"1": 0.34, "8": 0.56, "256": 8.4},
     "output": {"shape": [1], "dtype": "int64"},
     "settings": {"offline_expected_qps": 30000, "server_target_qps": 26500}}

`latency_ms` is the time the device is busy with one batch of that size (not a host-timed call:
the harness's own per-batch work is real in a simulated run and must not be counted twice).
Between rows the time is interpolated linearly; below the smallest row a batch takes the smallest
row's time (an engine padded up to its batch); above the largest it runs in chunks of the largest,
as the torch runner does. `output` is the shape and dtype of one sample's answer, so that a
benchmark's postprocessing and accuracy log see what the real engine would give (zeros).
`reference_system` is the known system whose config the simulated run takes its batching from
(backends/sim/settings.py); `settings` (optional) are the ones the table's engine ran with where the
system's config now says otherwise (the config moves on to a faster engine; the table's figures
stay those of the engine it measured).
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class LatencyTable:
    source: str  # what was measured, on which machine, when
    reference_system: str  # a known system: its config gives the simulated run's batching
    batch_sizes: tuple[int, ...]  # ascending
    seconds: tuple[float, ...]  # device time per batch of batch_sizes[i]
    output_shape: tuple[int, ...] = (1,)
    output_dtype: str = "int64"
    # Settings the measured engine ran with, over the reference system's config (settings.py).
    settings: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.batch_sizes or len(self.batch_sizes) != len(self.seconds):
            raise HarnessError("a sim latency table needs one time per batch size, at least one")
        if list(self.batch_sizes) != sorted(set(self.batch_sizes)) or self.batch_sizes[0] < 1:
            raise HarnessError(
                f"sim latency table: batch sizes must be distinct and positive, got "
                f"{list(self.batch_sizes)}"
            )
        if any(not math.isfinite(s) or s <= 0 for s in self.seconds):
            raise HarnessError(
                f"sim latency table: times must be positive, got {list(self.seconds)}"
            )
        try:
            np.dtype(self.output_dtype)
        except TypeError as error:
            raise HarnessError(
                f"sim latency table: unknown output dtype {self.output_dtype!r}"
            ) from error

    @property
    def largest(self) -> int:
        return self.batch_sizes[-1]

    def batch_seconds(self, count: int) -> float:
        """Device time for `count` samples (0 for none)."""
        if count <= 0:
            return 0.0
        full, rest = divmod(count, self.largest)
        total = full * self.seconds[-1]
        if rest:
            total += self._within(rest)
        return total

    def samples_per_second(self, batch: int) -> float:
        return batch / self.batch_seconds(batch)

    def _within(self, count: int) -> float:
        sizes, seconds = self.batch_sizes, self.seconds
        above = bisect.bisect_left(sizes, count)
        if sizes[above] == count or above == 0:
            return seconds[above]
        low, high = sizes[above - 1], sizes[above]
        share = (count - low) / (high - low)
        return seconds[above - 1] + share * (seconds[above] - seconds[above - 1])


def table_from_rates(
    source: str, reference_system: str, rates: Mapping[int, float], **extra: object
) -> LatencyTable:
    """A table from measured throughputs (samples/s at each batch size, back-to-back replays):
    a batch of b keeps the device busy b / rate seconds."""
    sizes = tuple(sorted(rates))
    return LatencyTable(
        source,
        reference_system,
        sizes,
        tuple(size / rates[size] for size in sizes),
        **extra,  # type: ignore[arg-type]
    )


# docs/performance.md, "One NVIDIA H200 (nvidia-h200, driver 580.159.04, torch 2.11.0+cu130,
# 2026-11-22)": the fp16 AOTInductor engine alone, its CUDA graph replayed back to back on real
# samples in GPU memory (CUDA events): batch 1: 2,937 samples/s, 8: 14,210, 128: 29,652,
# 256: 30,423. ms per batch = batch / rate: 0.340, 0.563, 4.317, 8.415. The output is the
# engine's ArgMax, one int64 per sample (end_on_device, the H200 configs' default). The rates and
# Server timeout are the ones the H200 config held while it ran this engine (it runs the FP8 engine
# now: benchmarks/resnet50/configs.py).
RESNET50_H200_FP16 = table_from_rates(
    "ResNet-50 fp16 AOTInductor engine alone on one H200, back-to-back CUDA graph replays "
    "(docs/performance.md, 2026-11-22)",
    "H200-SXM-141GBx1",
    {1: 2_937.0, 8: 14_210.0, 128: 29_652.0, 256: 30_423.0},
    output_shape=(1,),
    output_dtype="int64",
    settings={
        "offline_expected_qps": 30_000.0,
        "server_target_qps": 26_500.0,
        "server_batch_timeout_us": 6_000,
    },
)

# docs/performance.md, "The 3x3 layers as TMA implicit GEMMs ... (2026-11-26)": the FP8 engine
# alone on one H100 (torch_raw, the same replays): batch 1: 2,546 samples/s, 8: 15,965, 128:
# 46,742, 256: 48,381. Its Server run there was INVALID from 40,000 queries/s with p99 35-51 ms;
# simulated with this table, the harness on a 2-core CPU held 42,500 and 44,500 VALID (p99
# 6.4-7.9 ms).
RESNET50_H100_FP8 = table_from_rates(
    "ResNet-50 FP8 engine alone on one H100, back-to-back CUDA graph replays "
    "(docs/performance.md, 2026-11-26)",
    "H100-SXM-80GBx1",
    {1: 2_546.0, 8: 15_965.0, 128: 46_742.0, 256: 48_381.0},
    output_shape=(1,),
    output_dtype="int64",
)

PRESETS: dict[str, LatencyTable] = {
    "resnet50-h200-fp16": RESNET50_H200_FP16,
    "resnet50-h100-fp8": RESNET50_H100_FP8,
}
# The preset a benchmark's simulated run uses when --sim_latency_table is not given.
DEFAULT_PRESETS: dict[str, str] = {"resnet50": "resnet50-h200-fp16"}


def default_table_name(benchmark: str) -> str:
    name = DEFAULT_PRESETS.get(benchmark)
    if name is None:
        raise HarnessError(
            f"the sim backend has no latency table for {benchmark}: give --sim_latency_table "
            f"(a JSON file, or one of {', '.join(sorted(PRESETS))})"
        )
    return name


def load_table(name_or_path: str) -> LatencyTable:
    """A preset by name, else a JSON file (see the module doc); a bad one is one HarnessError."""
    preset = PRESETS.get(name_or_path)
    if preset is not None:
        return preset
    path = Path(name_or_path)
    if not path.is_file():
        raise HarnessError(
            f"sim latency table {name_or_path!r} is neither a preset "
            f"({', '.join(sorted(PRESETS))}) nor a file"
        )
    try:
        record = json.loads(path.read_text())
        latency = record["latency_ms"]
        output = record.get("output", {})
        pairs = sorted((int(size), float(ms) / 1e3) for size, ms in latency.items())
        return LatencyTable(
            source=str(record.get("source", path)),
            reference_system=str(record["reference_system"]),
            batch_sizes=tuple(size for size, _ in pairs),
            seconds=tuple(seconds for _, seconds in pairs),
            output_shape=tuple(int(n) for n in output.get("shape", (1,))),
            output_dtype=str(output.get("dtype", "int64")),
            settings={str(k): float(v) for k, v in record.get("settings", {}).items()},
        )
    except HarnessError as error:
        raise HarnessError(f"{path}: {error}") from error
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise HarnessError(
            f"{path}: not a sim latency table ({type(error).__name__}: {error}); it needs "
            '"reference_system" and "latency_ms": {"<batch>": <ms>, ...}'
        ) from error
