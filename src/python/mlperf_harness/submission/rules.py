"""The current round's rules (MLPerf Inference v6.1) for the models this project runs, as MLCommons'
submission checker and compliance tests state them. One table, read by the audits, staging, the
preflight check and the report, so a new benchmark or a new round changes only this file.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario

ROUND = "v6.1"

# LoadGen's three seeds of the round (LoadGen 6.0.17's built-in mlperf.conf carries them).
SEEDS = {
    "qsl_rng_seed": 2085463073848966840,
    "sample_index_rng_seed": 2747215439041700203,
    "schedule_rng_seed": 16159082839903944936,
}
MIN_DURATION_MS = 600_000  # every performance run, audits included
OFFLINE_MIN_SAMPLES_PER_QUERY = 24_576  # closed division
TEST01_ACCURACY_LOG_RNG_SEED = 720381539243781796
# Each scenario's metric as the checker reads it from the detail log: rates for Offline and Server,
# early-stopping latencies (ns) for SingleStream (its p90) and MultiStream (its p99).
METRIC_KEYS = {
    Scenario.OFFLINE: "result_samples_per_second",
    Scenario.SERVER: "result_completed_samples_per_sec",
    Scenario.SINGLE_STREAM: "early_stopping_latency_ss",
    Scenario.MULTI_STREAM: "early_stopping_latency_ms",
}
SYSTEM_TYPES = ("datacenter", "edge", "datacenter,edge")
STATUSES = ("available", "preview", "rdi")
DIVISIONS = ("closed", "open")


class AuditTest(enum.Enum):
    TEST01 = "TEST01"  # logs a random subset of responses during a performance run
    TEST04 = "TEST04"  # sends the same sample every time, to catch caching
    TEST06 = "TEST06"  # LLM output consistency (no benchmark of ours needs it yet)

    @classmethod
    def parse(cls, text: str) -> AuditTest:
        for test in cls:
            if test.value.lower() == text.strip().lower():
                return test
        raise HarnessError(f"unknown audit test {text!r}: choose one of TEST01, TEST04, TEST06")


@dataclass(frozen=True)
class ModelRules:
    """What the round asks of one submission model (the checker's model name)."""

    model: (
        str  # the results/ directory name: "resnet50" (the checker maps it to "resnet"), "bert-99"
    )
    metric: str  # the accuracy metric's name in the checker ("acc", "F1", "DICE")
    accuracy_target: float  # in the metric's own unit (top-1 percent, F1, mean DICE)
    dataset_size: int  # an accuracy run covers every sample
    performance_sample_count: int  # the least effective_performance_sample_count allowed
    scenarios: dict[str, tuple[Scenario, ...]]  # required scenarios per system type
    audits: tuple[AuditTest, ...]
    accuracy_log_sampling_target: int  # TEST01's audit.config
    server_latency_ns: int | None = None  # Server's target latency bound, where Server is allowed
    min_queries: dict[Scenario, int] | None = None  # least query counts the checker asks

    @property
    def accuracy_fraction(self) -> float:
        """The share of the reference accuracy a closed-division run must reach (99% or 99.9%)."""
        return 0.999 if self.model.endswith("99.9") else 0.99

    @property
    def test01_accuracy_delta_percent(self) -> float:
        """TEST01 Part III: how far the audit run's accuracy may differ from the accuracy run's,
        in percent (MLCommons: 1% for the 99% models, 0.1% for the 99.9% ones)."""
        return 0.1 if self.model.endswith("99.9") else 1.0

    def required_scenarios(self, system_type: str) -> tuple[Scenario, ...]:
        if system_type not in self.scenarios:
            allowed = ", ".join(self.scenarios)
            raise HarnessError(
                f"{self.model} cannot be submitted as system type {system_type!r}: use {allowed}"
            )
        return self.scenarios[system_type]


_SS, _MS, _OFF, _SRV = (
    Scenario.SINGLE_STREAM,
    Scenario.MULTI_STREAM,
    Scenario.OFFLINE,
    Scenario.SERVER,
)
_EDGE_SS_OFF: dict[str, tuple[Scenario, ...]] = {
    "edge": (_SS, _OFF),
    "datacenter,edge": (_SS, _OFF),
}

MODELS: dict[str, ModelRules] = {
    rules.model: rules
    for rules in (
        # ResNet-50 is edge-only since v5.1: a plain "datacenter" system cannot submit it.
        ModelRules(
            "resnet50",
            "acc",
            76.46 * 0.99,
            50_000,
            1024,
            {"edge": (_SS, _MS, _OFF), "datacenter,edge": (_SS, _MS, _OFF, _SRV)},
            (AuditTest.TEST01, AuditTest.TEST04),
            4096,
            server_latency_ns=15_000_000,
            min_queries={_SS: 1024, _MS: 270_336, _SRV: 270_336, _OFF: 1},
        ),
        ModelRules(
            "bert-99", "F1", 90.874 * 0.99, 10_833, 10_833, _EDGE_SS_OFF, (AuditTest.TEST01,), 4096
        ),
        ModelRules(
            "bert-99.9",
            "F1",
            90.874 * 0.999,
            10_833,
            10_833,
            _EDGE_SS_OFF,
            (AuditTest.TEST01,),
            4096,
        ),
        ModelRules(
            "3d-unet-99",
            "DICE",
            0.86170 * 0.99,
            43,
            43,
            {"datacenter": (_OFF,), **_EDGE_SS_OFF},
            (AuditTest.TEST01,),
            64,
        ),
        ModelRules(
            "3d-unet-99.9",
            "DICE",
            0.86170 * 0.999,
            43,
            43,
            {"datacenter": (_OFF,), **_EDGE_SS_OFF},
            (AuditTest.TEST01,),
            64,
        ),
    )
}


def model_rules(model: str) -> ModelRules:
    try:
        return MODELS[model]
    except KeyError:
        known = ", ".join(MODELS)
        raise HarnessError(f"no {ROUND} rules for model {model!r}: known are {known}") from None
