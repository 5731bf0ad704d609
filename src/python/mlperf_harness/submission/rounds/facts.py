"""The shape of one round's table: what an MLPerf Inference round asks of a submission, as that
round's MLCommons submission checker states it, with where each fact was read.

The tables themselves are the v*.py modules beside this one, one per round; `rounds.ROUNDS` holds
them. Nothing here is copied from MLCommons' code: each value was read there and written here by
hand, and its `Source` says where, so that a reader can check it (`git show <ref>:<path>` in a
clone of mlcommons/inference).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from types import MappingProxyType

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario

REPOSITORY = "mlcommons/inference"
# The current checker (tools/submission/submission_checker/, one package, every round since v5.0
# in constants.py), as read for these tables: master on 2026-08-20.
CURRENT_CHECKER_COMMIT = "b66003e10e2db4b8c36a448b0545ec90fcc6e9e9"
CONSTANTS = "tools/submission/submission_checker/constants.py"
LOADER = "tools/submission/submission_checker/loader.py"
COMPLIANCE_CHECK = "tools/submission/submission_checker/checks/compliance_check.py"
MEASUREMENTS_CHECK = "tools/submission/submission_checker/checks/measurements_checks.py"
PERFORMANCE_CHECK = "tools/submission/submission_checker/checks/performance_check.py"
# Before v5.0 the checker was one script, tools/submission/submission_checker.py, at each round's tag.
SINGLE_SCRIPT = "tools/submission/submission_checker.py"


@dataclass(frozen=True)
class Source:
    """Where a fact was read: a file of mlcommons/inference at a tag or commit, and the name in it."""

    ref: str  # a tag ("v4.0") or a commit
    path: str
    where: str = ""  # e.g. MODEL_CONFIG["v6.0"]["seeds"]

    def __str__(self) -> str:
        name = f" {self.where}" if self.where else ""
        return f"{self.path}{name} at {self.ref} of {REPOSITORY}"


def current(path: str, where: str = "") -> Source:
    """A fact of the current checker (the commit these tables were read at)."""
    return Source(CURRENT_CHECKER_COMMIT, path, where)


class AuditTest(enum.Enum):
    TEST01 = "TEST01"  # logs a random subset of responses during a performance run
    TEST04 = "TEST04"  # sends the same sample every time, to catch caching
    TEST05 = "TEST05"  # other LoadGen seeds (v4.0 and v4.1): no favoured seed
    TEST06 = "TEST06"  # LLM output consistency (GPT-J in v5.0; Llama2)

    @classmethod
    def parse(cls, text: str) -> AuditTest:
        for test in cls:
            if test.value.lower() == text.strip().lower():
                return test
        names = ", ".join(test.value for test in cls)
        raise HarnessError(f"unknown audit test {text!r}: choose one of {names}")


# The audits this harness runs and verifies (audits.py, verify.py). Another audit a round lists is
# named in its table and refused in one line where a run or a submission would need it.
RUNNABLE_AUDITS = frozenset(
    {AuditTest.TEST01, AuditTest.TEST04, AuditTest.TEST05, AuditTest.TEST06}
)
NOT_YET: dict[AuditTest, str] = {}  # an audit a round lists that the harness does not run yet


def check_runnable(test: AuditTest, what: str) -> None:
    """Refuse, in one line, an audit the harness does not run yet."""
    if test not in RUNNABLE_AUDITS:
        why = NOT_YET.get(test, f"{test.value} has no implementation here")
        raise HarnessError(f"{what} needs {test.value}, which this harness does not run yet: {why}")


# What a checker's metric key holds, where its name says otherwise: v4.0's "WER" key reads RNN-T's
# accuracy (100 - WER), the figure its target is for.
METRIC_LABELS = MappingProxyType({"WER": "accuracy (100 - WER)"})


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


@dataclass(frozen=True)
class ModelRules:
    """What a round asks of one submission model (our results/ directory name)."""

    model: (
        str  # the results/ directory name: "resnet50" (the checker maps it to "resnet"), "bert-99"
    )
    # (metric, least value) pairs, in the checker's order: the first is the one reported.
    accuracy: tuple[tuple[str, float], ...]
    dataset_size: int | None  # an accuracy run covers every sample; None: the round checks none
    performance_sample_count: int  # the least effective_performance_sample_count allowed
    scenarios: Mapping[str, tuple[Scenario, ...]]  # required scenarios per system type
    audits: tuple[AuditTest, ...]
    accuracy_log_sampling_target: int | None  # TEST01's audit.config; None: no TEST01
    server_latency_ns: int | None = None  # Server's target latency bound, where Server is allowed
    # least query counts, per scenario
    min_queries: Mapping[Scenario, int] = field(default_factory=lambda: MappingProxyType({}))
    offline_min_samples_per_query: int | None = None  # closed Offline; None: the checker has none
    checker_model: str = ""  # the checker's name where it differs ("resnet")
    # Scenarios a system type may add to the required ones (the checker's optional-scenarios-*:
    # Llama2-70B's Server and Interactive on a datacenter system).
    optional: Mapping[str, tuple[Scenario, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # The result a scenario reports where it is not the round's samples-based one (the checker's
    # RESULT_FIELD_BENCHMARK_OVERWRITE: an LLM's tokens per second).
    metric_keys: Mapping[Scenario, str] = field(default_factory=lambda: MappingProxyType({}))
    # (metric, greatest value) pairs: the checker's accuracy-upper-limit (SDXL's FID and CLIP).
    accuracy_upper: tuple[tuple[str, float], ...] = ()
    # Where a fact of this model was read, where not from the round's own table (see Round.sources).
    sources: Mapping[str, Source] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def metric(self) -> str:
        return self.accuracy[0][0]

    @property
    def metric_label(self) -> str:
        """The reported metric as people read it (METRIC_LABELS), not the checker's key."""
        return metric_label(self.metric)

    @property
    def accuracy_target(self) -> float:
        return self.accuracy[0][1]

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
            allowed = ", ".join(self.scenarios) or "none"
            raise HarnessError(
                f"{self.model} cannot be submitted as system type {system_type!r}: use {allowed}"
            )
        return self.scenarios[system_type]

    def allowed_scenarios(self, system_type: str) -> tuple[Scenario, ...]:
        """The required scenarios and the optional ones a system type may add."""
        required = self.required_scenarios(system_type)
        extra = tuple(s for s in self.optional.get(system_type, ()) if s not in required)
        return required + extra


@dataclass(frozen=True)
class Layout:
    """Where a round's checker looks for each part of a submitter's directory.

    Since v6.0 everything of a result is in results/<system>/<model>/<scenario>/: its logs,
    measurements.json, user.conf, README.md and the audits' TEST0x/. Before, the audits were under
    compliance/<system>/<model>/<scenario>/ and the rest under measurements/<system>/<model>/
    <scenario>/, its JSON named for the system and scenario; the code was in code/, not src/.
    """

    source_dir: str  # "src" or "code"
    audits_root: str  # "results" or "compliance"
    measurements_root: str  # "results" or "measurements"
    measurements_json: (
        str | None
    )  # "measurements.json"; None: "<system>_<implementation>_<scenario>.json"
    measurement_files: tuple[str, ...]  # beside that JSON, each present and not empty
    # v4.0 looked for code/<model>/<implementation>/ (the part of the JSON's name between the
    # system's name and the scenario); later rounds only for the code directory itself.
    code_per_model: bool = False

    @property
    def together(self) -> bool:
        """Whether audits and measurements sit in each result's own directory (since v6.0)."""
        return self.audits_root == "results" and self.measurements_root == "results"

    def result_dir(self, system: str, model: str, scenario: Scenario) -> PurePosixPath:
        return PurePosixPath("results", system, model, scenario.value)

    def audits_dir(self, system: str, model: str, scenario: Scenario) -> PurePosixPath:
        return PurePosixPath(self.audits_root, system, model, scenario.value)

    def measurements_dir(self, system: str, model: str, scenario: Scenario) -> PurePosixPath:
        return PurePosixPath(self.measurements_root, system, model, scenario.value)

    def measurements_name(self, system: str, implementation: str, scenario: Scenario) -> str:
        if self.measurements_json is not None:
            return self.measurements_json
        return f"{system}_{implementation}_{scenario.value}.json"

    def code_dir(self, model: str, implementation: str) -> PurePosixPath:
        if self.code_per_model:
            return PurePosixPath(self.source_dir, model, implementation)
        return PurePosixPath(self.source_dir)


@dataclass(frozen=True)
class Checker:
    """How to run the round's own checker from a checkout of mlcommons/inference."""

    script: str  # relative to the checkout
    version: str  # its --version
    modules: tuple[str, ...]  # what it imports beyond the standard library
    ref: str  # a checkout of this tag or commit (or a later one that still holds the round)

    def describe(self) -> str:
        return f"{self.script} --version {self.version} (at {self.ref} of {REPOSITORY} or later)"


@dataclass(frozen=True)
class CheckerDefect:
    """An error the round's MLCommons checker logs because of a defect of its own, whatever the
    tree holds: reported by the preflight check as such, never counted against the tree."""

    pattern: str  # searched in the error's message
    why: str
    source: Source


# Every fact a round's table names, each with its Source in Round.sources.
FACTS = (
    "models",
    "scenarios",
    "audits",
    "accuracy",
    "accuracy_patterns",
    "performance_sample_count",
    "dataset_size",
    "min_duration_ms",
    "min_queries",
    "offline_min_samples_per_query",
    "server_latency_ns",
    "seeds",
    "test05_seeds",
    "test01",
    "test04",
    "layout",
    "metric_keys",
    "checker",
)


@dataclass(frozen=True)
class Round:
    name: str  # "v6.1"
    listed_models: tuple[str, ...]  # every model the round's checker lists (its own names)
    models: Mapping[str, ModelRules]  # those this harness can stage, by results/ directory name
    seeds: Mapping[str, int]  # LoadGen's three seeds the checker compares in every performance log
    test05_seeds: Mapping[str, int] | None  # TEST05's, where the round has TEST05
    min_duration_ms: int  # every performance run, audits included
    # Each metric's accuracy.txt line as the checker parses it (ours: the same lines match).
    accuracy_patterns: Mapping[str, str]
    metric_keys: Mapping[Scenario, str]  # each scenario's result in the detail log
    test01_accuracy_log_rng_seed: int  # TEST01's audit.config
    test04_settings: Mapping[str, int]  # TEST04's audit.config, every scenario
    layout: Layout
    checker: Checker
    sources: Mapping[str, Source]  # one per FACTS entry
    notes: tuple[str, ...] = field(default=())  # what a reader of the table should know
    checker_defects: tuple[CheckerDefect, ...] = field(default=())

    def model(self, name: str) -> ModelRules:
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(self.models) or "none"
            raise HarnessError(
                f"no {self.name} rules for model {name!r}: {self.name} has {known}"
            ) from None

    def source(self, fact: str, model: str | None = None) -> Source:
        """Where `fact` was read (for `model`, where that model's was read elsewhere)."""
        if model is not None and fact in self.models[model].sources:
            return self.models[model].sources[fact]
        return self.sources[fact]

    @property
    def before_v6(self) -> bool:
        return not self.layout.together
