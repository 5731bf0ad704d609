"""The settings a simulated run takes from the real system its latency table was measured on.

`--backend sim --sim_gpus 8` on any machine runs as the table's reference system would, with 8
GPUs: that system's config for the benchmark and scenario gives the batching (batch size, runners
per GPU, Server timeout) and the expected rates, which are scaled from its GPU count to the
simulated one (Offline's expected samples/s, Server's target queries/s); where the table names
settings of its own (the ones its engine ran with, table.py), those are taken instead of the
config's. This layer sits above the
machine's own config (a CPU machine's would batch 8 samples for ONNX Runtime) and below the stand-in
run's defaults and the command line, so any flag still wins.
"""

from __future__ import annotations

from typing import Any

from mlperf_harness.backends.sim.table import default_table_name, load_table
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.config.registry import resolve
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.systems.known import KNOWN_SYSTEMS

# Taken from the reference system's config as they are.
_COPIED = (
    "batch_size",
    "gpu_inference_streams",
    "server_batch_timeout_us",
    "single_stream_expected_latency_ns",
    "multi_stream_expected_latency_ns",
)
# Rates of the whole system: scaled by simulated GPUs / the reference system's GPUs.
_SCALED = ("offline_expected_qps", "server_target_qps")


def reference_gpu_count(system: str) -> int:
    for known in KNOWN_SYSTEMS:
        if known.name == system and known.match.gpu_count > 0:
            return known.match.gpu_count
    raise HarnessError(f"sim latency table: reference system {system!r} is no known GPU system")


def sim_settings_layer(
    benchmark: str, scenario: Scenario, settings: HarnessSettings
) -> tuple[HarnessSettings, str]:
    """(the layer, its source label) for a sim run of `benchmark` in `scenario`; `settings` are the
    run's so far, flags included (they name the table and the GPU count)."""
    table_name = settings.sim_latency_table or default_table_name(benchmark)
    table = load_table(table_name)
    gpus = settings.sim_gpus or 1
    per_reference = gpus / reference_gpu_count(table.reference_system)
    reference = resolve(benchmark, scenario, table.reference_system)
    if reference.key.system != table.reference_system:
        raise HarnessError(
            f"sim: {benchmark} has no {scenario.value} config for the table's reference system "
            f"{table.reference_system}"
        )
    unknown = sorted(set(table.settings) - {*_COPIED, *_SCALED})
    if unknown:
        raise HarnessError(
            f"sim latency table {table_name}: settings it cannot give: {', '.join(unknown)} "
            f"(known: {', '.join((*_COPIED, *_SCALED))})"
        )
    values: dict[str, Any] = {"sim_gpus": gpus, "sim_latency_table": table_name}
    for name in (*_COPIED, *_SCALED):
        value = table.settings.get(name, getattr(reference.settings, name))
        if value is None:
            continue
        # The copied settings are counts and durations: whole numbers (a JSON table's are floats).
        values[name] = value * per_reference if name in _SCALED else int(value)
    layer = HarnessSettings(**values)
    return layer, f"sim: the {table.reference_system} config, rates x {per_reference:g}"
