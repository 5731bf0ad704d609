"""The table of every tunable setting: one frozen dataclass whose fields carry their scenarios and help.

Config classes, custom-system files and the command line each produce a `HarnessSettings`. A field
left at None says nothing, so the layer below decides (in the end LoadGen's mlperf.conf or the
benchmark's code).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.backends.names import BACKEND_NAMES
from mlperf_harness.engines.torch_gptj.scale_artifact import FP8_ACTIVATIONS
from mlperf_harness.engines.torch_llama.options import PREFILLS
from mlperf_harness.engines.torch_retinanet.nms_ways import NMS_WAYS
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.paths import LOADGEN_PATHS
from mlperf_harness.loadgen.settings import LoadgenSettings, Scenario, TestMode

ALL_SCENARIOS = frozenset(Scenario)
PRECISIONS = ("fp32", "fp16", "bf16", "int8", "fp8")
# DLRM-v2's ways of pooling its lookups on the torch backend (benchmarks/dlrm_v2/pooled_lookup.py).
DLRM_EMBEDDINGS = ("torch", "kernel", "kernel-int8")
# DLRM-v2's ways of doing a cross layer's second product and update (benchmarks/dlrm_v2/cross_update.py).
DLRM_CROSS_WAYS = ("torch", "kernel")
_INFO_KEY = "mlperf_harness.setting"  # the key of a field's FieldInfo in its dataclass metadata


@dataclass(frozen=True)
class FieldInfo:
    """One row of the table, beyond the field's name and type."""

    scenarios: frozenset[Scenario]
    help: str
    loadgen: bool  # True: a LoadGen TestSettings value; False: read by the harness itself
    choices: tuple[str, ...] = ()  # the allowed values of a str setting; empty: any
    allow_zero: bool = False  # numbers must be positive, or non-negative when this is set
    # The benchmarks and backends that read the setting (empty: any): set for another, it is
    # refused in one line (owner_problem) rather than silently doing nothing.
    benchmarks: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()


def _setting(
    help: str,
    scenarios: frozenset[Scenario] = ALL_SCENARIOS,
    *,
    loadgen: bool = False,
    choices: tuple[str, ...] = (),
    allow_zero: bool = False,
    benchmarks: tuple[str, ...] = (),
    backends: tuple[str, ...] = (),
) -> Any:  # Any, as dataclasses.field is: the annotation on the class gives the real type
    info = FieldInfo(scenarios, help, loadgen, choices, allow_zero, benchmarks, backends)
    return dataclasses.field(default=None, metadata={_INFO_KEY: info})


_OFFLINE = frozenset({Scenario.OFFLINE})
_SERVER = frozenset({Scenario.SERVER})
_SINGLE_STREAM = frozenset({Scenario.SINGLE_STREAM})
_MULTI_STREAM = frozenset({Scenario.MULTI_STREAM})


@dataclass(frozen=True)
class HarnessSettings:
    """Every tunable setting of a run; this class is the table of fields (see `describe_fields`)."""

    # The harness and its backend.
    # Not `choices`: the registry checks the name (one message for flags and configs), and tests
    # register backends of their own.
    backend: str | None = _setting(f"inference backend: {', '.join(BACKEND_NAMES)}")
    precision: str | None = _setting("numeric precision of the engine", choices=PRECISIONS)
    batch_size: int | None = _setting("largest batch of samples per inference call")
    worker_count: int | None = _setting("harness worker threads that feed the backend")
    intra_op_threads: int | None = _setting("CPU threads the backend may use within one operator")
    server_batch_timeout_us: int | None = _setting(
        "longest a partial batch waits for more queries, in us (0: send at once)",
        _SERVER,
        allow_zero=True,
    )
    server_length_buckets: int | None = _setting(
        "Server: queues by sample length, each of an equal share of the samples, a batch taking "
        "one queue's samples, where the samples have lengths (1: one queue, arrival order)",
        _SERVER,
    )
    # The GPU backends (torch; tensorrt reads none of these yet).
    gpu_inference_streams: int | None = _setting(
        "runners per GPU, each with its own worker thread, CUDA streams and graphs (NVIDIA's name)"
    )
    start_from_device: bool | None = _setting(
        "copy the loaded samples into every GPU's memory before timing; batches are gathered there"
    )
    end_on_device: bool | None = _setting(
        "reduce outputs on the GPU (ResNet-50: the ArgMax), copying back only the result"
    )
    tensor_parallel: int | None = _setting(
        "LLMs, torch: GPUs per engine, tensor parallel (the host's GPUs in groups of this many, "
        "one serving loop each)"
    )
    admit_batch: int | None = _setting(
        "LLMs: the serving loop admits waiting samples once this many slots can take them, or "
        "once the oldest has waited this many decode steps (default 1: at every step); one "
        "prefill forward for several prompts",
        benchmarks=("gptj", "llama2-70b"),
    )
    engine_processes: bool | None = _setting(
        "LLMs: each serving loop's engine in a process of its own (generation/engine_process.py), "
        "so that engines on several GPUs do not share one interpreter (default off)",
        benchmarks=("gptj", "llama2-70b"),
    )
    embedding_placement: str | None = _setting(
        "DLRM-v2, torch: embedding tables replicated on every GPU, or sharded by rows across them",
        choices=("replicated", "sharded"),
    )
    embedding: str | None = _setting(
        "DLRM-v2, torch: how a batch's lookups are pooled: our Triton kernel over fp16 rows "
        "(kernel, the default), torch's embedding_bag over them (torch), or the kernel over int8 "
        "rows with a scale each (kernel-int8)",
        choices=DLRM_EMBEDDINGS,
        benchmarks=("dlrm-v2",),
        backends=("torch",),
    )
    cross: str | None = _setting(
        "DLRM-v2, torch: a cross layer's second product and update x + x0 * (W y + b): torch's "
        "addmm then addcmul (torch, the default), or our Triton kernel in one pass (kernel; fp16)",
        choices=DLRM_CROSS_WAYS,
        benchmarks=("dlrm-v2",),
        backends=("torch",),
    )
    nms: str | None = _setting(
        "RetinaNet, torch: the GPU postprocessing's per-class NMS, built into the engine: two "
        "Triton kernels, the pairs' suppression bits then a greedy scan per image (scan, the "
        "default), or the first way, rounds of torch ops towards the same fixed point (rounds)",
        choices=NMS_WAYS,
        benchmarks=("retinanet",),
        backends=("torch",),
    )
    fp8_activations: str | None = _setting(
        "GPT-J, torch, --precision fp8: each product's activations quantized per token on the fly "
        "(row, the default) or by one scale per projection fixed from its input's maximum over "
        "the calibration samples (static; calibrated once, kept in the engine cache)",
        choices=FP8_ACTIVATIONS,
        benchmarks=("gptj",),
        backends=("torch",),
    )
    prefill: str | None = _setting(
        "Llama2-70B, torch: how the engine prefills: packed (the prompts of a call in one forward, "
        "the default), static (a call of one prompt over a fixed length bucket, under a CUDA "
        "graph per bucket: Interactive's admissions, the GPU configs' choice there), chunked (each "
        "prompt's tokens joined to the next decode steps' forwards; not yet timed on a GPU) or "
        "serial",
        choices=PREFILLS,
        benchmarks=("llama2-70b",),
        backends=("torch",),
    )
    # The sim backend (backends/sim): simulated GPUs that sleep a real engine's measured time.
    sim_gpus: int | None = _setting("sim backend: how many GPUs to simulate")
    sim_latency_table: str | None = _setting(
        "sim backend: batch size -> device time, a preset name or a JSON file (backends/sim/table.py)"
    )
    # Which LoadGen runs the test (loadgen/paths.py): its Python binding or its C++ in our module.
    loadgen_path: str | None = _setting(
        "python (mlperf_loadgen, the default) or native (LoadGen's C++ API, no Python per query)",
        choices=LOADGEN_PATHS,
    )
    native_round_trips: bool | None = _setting(
        "on the native LoadGen, torch: answer each query in C++ on LoadGen's issue thread by "
        "launching the engines' round trip CUDA graphs (default: where the benchmark allows)",
        _SINGLE_STREAM | _MULTI_STREAM,
    )
    order_by_length: bool | None = _setting(
        "Offline: sort the query by sample length before cutting it into batches, where the "
        "benchmark's samples have lengths (RNN-T's utterances; default on there)",
        _OFFLINE,
    )
    # LoadGen's TestSettings: these override mlperf.conf and user.conf.
    min_duration_ms: int | None = _setting(
        "LoadGen minimum test duration in ms (a shorter run is INVALID)", loadgen=True
    )
    max_duration_ms: int | None = _setting("LoadGen maximum test duration in ms", loadgen=True)
    min_query_count: int | None = _setting("LoadGen minimum number of queries", loadgen=True)
    max_query_count: int | None = _setting("LoadGen maximum number of queries", loadgen=True)
    performance_sample_count: int | None = _setting(
        "LoadGen samples held in memory for the performance run", loadgen=True
    )
    offline_expected_qps: float | None = _setting(
        "expected samples/s; sizes Offline's single query", _OFFLINE, loadgen=True
    )
    server_target_qps: float | None = _setting(
        "queries/s LoadGen sends (Poisson arrivals)", _SERVER, loadgen=True
    )
    server_target_latency_ns: int | None = _setting(
        "latency bound in ns that the run's percentile must meet", _SERVER, loadgen=True
    )
    single_stream_expected_latency_ns: int | None = _setting(
        "expected latency of one query in ns", _SINGLE_STREAM, loadgen=True
    )
    multi_stream_expected_latency_ns: int | None = _setting(
        "expected latency of one query in ns", _MULTI_STREAM, loadgen=True
    )
    multi_stream_samples_per_query: int | None = _setting(
        "samples in each query", _MULTI_STREAM, loadgen=True
    )

    def __post_init__(self) -> None:
        for name in self.set_fields():
            value = getattr(self, name)
            problem = value_problem(name, value)
            if problem is not None:
                raise HarnessError(problem)
            if value_type(name) is float:
                # An int is a fine float to write; store a float so every reader sees one type.
                object.__setattr__(self, name, float(value))

    def set_fields(self) -> tuple[str, ...]:
        """The names of the fields that hold a value, in table order."""
        return tuple(name for name in setting_names() if getattr(self, name) is not None)

    def merged_over(self, base: HarnessSettings) -> HarnessSettings:
        """These settings layered over `base`: a field set here wins, the rest come from `base`."""
        return dataclasses.replace(
            base, **{name: getattr(self, name) for name in self.set_fields()}
        )

    def to_loadgen_settings(
        self,
        model: str,
        scenario: Scenario,
        mode: TestMode = TestMode.PERFORMANCE_ONLY,
        user_conf: Path | None = None,
    ) -> LoadgenSettings:
        """The LoadGen fields only; refuses a set field that the scenario would silently ignore."""
        for name in self.set_fields():
            problem = scenario_problem(name, scenario)
            if problem is not None:
                raise HarnessError(problem)
        loadgen_values = {
            name: getattr(self, name) for name in setting_names() if field_info(name).loadgen
        }
        return LoadgenSettings(
            model=model, scenario=scenario, mode=mode, user_conf=user_conf, **loadgen_values
        )


_FIELD_INFO = {
    field.name: typing.cast(FieldInfo, field.metadata[_INFO_KEY])
    for field in dataclasses.fields(HarnessSettings)
}
# The annotations are strings (from __future__ import annotations); resolve `int | None` to int.
_VALUE_TYPES: dict[str, type] = {
    name: next(arg for arg in typing.get_args(hint) if arg is not type(None))
    for name, hint in typing.get_type_hints(HarnessSettings).items()
}
# What a setting of each type accepts. bool is an int to Python, never a count or a duration here.
_ACCEPTED_TYPES: dict[type, tuple[type, ...]] = {
    int: (int,),
    float: (int, float),
    str: (str,),
    bool: (bool,),
}


def setting_names() -> tuple[str, ...]:
    return tuple(_FIELD_INFO)


def applicable_settings(scenario: Scenario) -> tuple[str, ...]:
    """The settings that apply to `scenario`, in table order."""
    return tuple(name for name in setting_names() if scenario_problem(name, scenario) is None)


def field_info(name: str) -> FieldInfo:
    return _FIELD_INFO[name]


def value_type(name: str) -> type:
    """int, float, str or bool: the type of the setting's value when it is set."""
    return _VALUE_TYPES[name]


def type_label(name: str) -> str:
    """The setting's type as the table shows it: int, float, str, or its choices (fp32|fp16|bf16|int8)."""
    choices = field_info(name).choices
    return "|".join(choices) if choices else value_type(name).__name__


def value_problem(name: str, value: object) -> str | None:
    """Why `value` cannot be setting `name`'s value, or None when it can."""
    expected = value_type(name)
    wrong_bool = isinstance(value, bool) != (expected is bool)
    if wrong_bool or not isinstance(value, _ACCEPTED_TYPES[expected]):
        return f"{name} must be {type_label(name)}, got {type(value).__name__} {value!r}"
    info = field_info(name)
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if info.choices and value not in info.choices:
            return f"{name} must be one of {', '.join(info.choices)}, got {value!r}"
        return None
    assert isinstance(value, int | float)
    if not math.isfinite(value):
        return f"{name} must be a finite number, got {value!r}"
    if value < 0 or (value == 0 and not info.allow_zero):
        bound = "non-negative" if info.allow_zero else "positive"
        return f"{name} must be {bound}, got {value!r}"
    return None


def scenario_problem(name: str, scenario: Scenario) -> str | None:
    """Why setting `name` cannot be set for `scenario`, or None when it applies."""
    scenarios = field_info(name).scenarios
    if scenario in scenarios or scenario.loadgen in scenarios:  # Interactive: Server's fields
        return None
    return f"{name} applies to {_scenarios_label(scenarios)} only, not {scenario.value}"


def for_another_backend(name: str, benchmark: str, backend: str) -> bool:
    """Whether this benchmark reads setting `name`, but with another backend than `backend`."""
    info = field_info(name)
    ours = not info.benchmarks or benchmark in info.benchmarks
    return ours and bool(info.backends) and backend not in info.backends


def owner_problem(name: str, benchmark: str, backend: str) -> str | None:
    """Why setting `name` does nothing for this benchmark and backend, or None when it is read."""
    info = field_info(name)
    if info.benchmarks and benchmark not in info.benchmarks:
        return f"{name} applies to {' and '.join(info.benchmarks)} only, not {benchmark}"
    if for_another_backend(name, benchmark, backend):
        return (
            f"{name} applies to {benchmark}'s {' and '.join(info.backends)} backend only, "
            f"not --backend {backend}"
        )
    return None


def describe_fields() -> str:
    """The table of fields as aligned text, for --help and the docs."""
    rows = [("setting", "type", "scenarios", "description")]
    for name in setting_names():
        info = field_info(name)
        rows.append((name, type_label(name), _scenarios_label(info.scenarios), info.help))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    return "\n".join(
        f"{name:<{widths[0]}}  {kind:<{widths[1]}}  {scenarios:<{widths[2]}}  {help_text}"
        for name, kind, scenarios, help_text in rows
    )


def _scenarios_label(scenarios: frozenset[Scenario]) -> str:
    if scenarios == ALL_SCENARIOS:
        return "all"
    # Enum order, so the label does not depend on set iteration order.
    return "/".join(scenario.value for scenario in Scenario if scenario in scenarios)
