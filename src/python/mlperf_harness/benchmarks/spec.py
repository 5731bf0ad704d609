"""What the harness needs to know about one benchmark, and what it hands back for one run."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.cli.options import DEFAULT_CONFIG_VER, RunOptions, parse_run_options
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.harness.sut import Postprocess, SizedPostprocess
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rounds import newest_round_listing
from mlperf_harness.submission.rules import AuditTest, ModelRules, model_rules

STAND_IN_NOTICE = "stand-in: not a valid MLPerf result"
STAND_IN_SECONDS = 60  # a stand-in's run: about a minute where its scenario allows
# And at least as many queries as LoadGen's early-stopping estimate needs to call a latency
# scenario VALID with no query over its bound: 64 for SingleStream's p90; 662 for MultiStream's
# p99 (mlperf.conf's own count); for Server's p99, 459 with none over and 662 with one (Server's
# stand-in bound is widened where the machine cannot meet it, so a few may be). Offline's one
# query is sized by its rate.
STAND_IN_QUERIES = {
    Scenario.OFFLINE: 1,
    Scenario.SERVER: 700,
    Scenario.SINGLE_STREAM: 64,
    Scenario.MULTI_STREAM: 662,
}


@dataclass(frozen=True)
class PreparedRun:
    """Everything resolved before LoadGen starts: the samples, the model, and what they are."""

    store: SampleStore
    backend_options: BackendOptions
    stand_in: bool = False
    model_sha256: str | None = None
    labels: list[int] = field(default_factory=list)  # ground truth per sample, for accuracy
    reference_accuracy: float | None = None  # the FP32 accuracy that 99% is judged against
    # Shown in the summary and recorded in result.json (where the model and data came from).
    provenance: dict[str, str] = field(default_factory=dict)
    # The share of reference_accuracy the run must reach, where the run's options decide it
    # (--config_ver high_accuracy: 99.9%); None: the benchmark's own.
    accuracy_fraction: float | None = None
    # The type of each logged response value, where the run's options chose it (--output_dtype).
    response_dtype: str | None = None
    # This run's postprocessing, where the run's options shape the responses (BERT's
    # --output_dtype); None: the benchmark's `postprocess`.
    postprocess: Postprocess | None = None
    # Per sample index, the bytes of its postprocessed row that LoadGen logs (a prefix: BERT's
    # real tokens); None: whole rows.
    response_bytes: npt.NDArray[np.int64] | None = None
    # Where each response's length depends on the outputs (RetinaNet's detections): made from a
    # batch's outputs and sample indices, in place of postprocess and response_bytes.
    sized_postprocess: SizedPostprocess | None = None
    # Where each response is the engine's output's first value, an integer label, less this
    # offset (ResNet-50's ArgMax on the GPU): the latency scenarios may then be answered in C++
    # (Runner.inline_round_trips). None: responses need the benchmark's postprocess.
    label_offset: int | None = None
    # Wraps each backend runner, where a sample is not one model input: 3D-UNet's sample is a
    # whole volume, answered by running the model on its many windows. None: the runners as made.
    wrap_runner: Callable[[Runner], Runner] | None = None
    # A generative benchmark's engines (store: a PromptStore): asked for when the run starts (a GPU
    # host counts its GPUs then), one maker per engine, each engine made as its runner activates.
    # The run is then answered by the serving loop (generation/serving.py), a loop per engine, not
    # by batches of runner calls.
    make_engines: Callable[[], Sequence[Callable[[], DecoderEngine]]] | None = None


def counted_samples(options: RunOptions, total: int, what: str) -> int:
    """How many of the `total` samples a run uses: --count, refused in one line where it asks for
    more than there are (`what`: "features of <file>", "images of <dir>"...). Refused rather than
    cut: an accuracy over fewer samples than asked for is easy to misread."""
    if options.count is None:
        return total
    if options.count > total:
        raise HarnessError(
            f"--count {options.count} is more than the {total} {what}; give at most {total}, or "
            "leave --count out"
        )
    return options.count


@dataclass(frozen=True)
class AccuracyReport:
    line: str  # the accuracy line in the MLCommons script's words
    record: dict[str, Any]  # the "accuracy" entry of result.json
    passed: bool


class Benchmark(abc.ABC):
    """A benchmark's code. Its settings live in config classes (its `configs` module), registered
    under the same `name`, which is also its model name in mlperf.conf / user.conf."""

    name: str
    # What a submission of this benchmark needs (submission/rules.py holds the round's values):
    # its compliance audits, TEST01's sampling target, and the data type of each logged response,
    # which TEST01 compares between the audit run and the accuracy run.
    submission_model: str | None = None  # its results/ directory name; None: not submittable
    # --config_ver -> results/ name, where a benchmark has variants (BERT and 3D-UNet: "default"
    # 99% of the reference's accuracy, NVIDIA's "high_accuracy" 99.9%); empty: submission_model.
    submission_models: Mapping[str, str] = MappingProxyType({})
    audit_tests: tuple[AuditTest, ...] = ()
    accuracy_log_sampling_target: int | None = 4096  # None: a model without TEST01
    response_dtype: str = "uint8"
    # What a sample feeds the engine (measurements.json's input_data_types); None: not submittable.
    input_data_type: str | None = None

    @abc.abstractmethod
    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        """Resolve model, data and engine (building or preprocessing what is missing) and the
        sample store, for the settings the run resolved (backend, precision...)."""

    def postprocess(self, outputs: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        """Runner outputs for a batch -> the per-sample bytes LoadGen logs for accuracy."""
        return outputs

    def served_sized_postprocess(
        self, prepared: PreparedRun, backend: str
    ) -> SizedPostprocess | None:
        """The sized postprocessing of outputs that servers running `backend` send (the Triton
        harness: its client prepares for "null", the servers' backend decides the outputs'
        layout). A benchmark whose responses vary in length and depend on the backend says so."""
        return prepared.sized_postprocess

    @property
    def default_round(self) -> str:
        """The round a run is for without --round: the newest whose checker lists its model
        (GPT-J: v5.0, DLRM-v2: v5.1; a benchmark no submission holds: the current round)."""
        return newest_round_listing(self.submission_model)

    def parse_options(self, argv: Sequence[str], prog: str | None = None) -> RunOptions:
        """A run's options from its flags, `default_round` where they name no --round: every
        place that turns flags into a run of this benchmark goes through here."""
        return parse_run_options(argv, prog or self.name, default_round=self.default_round)

    def submission_model_for(self, config_ver: str) -> str | None:
        """The results/ name of a run with this --config_ver (`submission_models`); a benchmark
        without that variant refuses in one line. Only the default variant unless a benchmark
        lists others."""
        models: dict[str, str | None] = dict(self.submission_models) or {
            DEFAULT_CONFIG_VER: self.submission_model
        }
        if config_ver not in models:
            raise HarnessError(
                f"{self.name} has no --config_ver {config_ver} (it has {', '.join(models)})"
            )
        return models[config_ver]

    def rules_for(self, options: RunOptions) -> ModelRules:
        """The run's round's rules for its --config_ver (its accuracy target, audits...)."""
        model = self.submission_model_for(options.config_ver)
        if model is None:
            raise HarnessError(f"{self.name} is not a benchmark a submission holds")
        return model_rules(model, options.round)

    def response_dtype_for(self, options: RunOptions) -> str:
        """The numpy type of each logged response value in a run with these options (TEST01
        compares the responses as such). `response_dtype` unless a benchmark lets
        --output_dtype choose; a benchmark that does not refuses the flag in one line."""
        if options.output_dtype is not None and options.output_dtype != self.response_dtype:
            raise HarnessError(
                f"{self.name} logs {self.response_dtype} responses: --output_dtype "
                f"{options.output_dtype} does not apply to it"
            )
        return self.response_dtype

    def variant_settings(
        self, config_ver: str, system: str, scenario: Scenario
    ) -> HarnessSettings | None:
        """Settings a --config_ver lays over the system's config (cli/run_settings.py), where that
        variant runs otherwise than the config's default: DLRM-v2-99.9's fp16 dense part where
        the config runs FP8. None: the config as it is."""
        return None

    def stand_in_run(self, scenario: Scenario) -> HarnessSettings:
        """Settings layered over the config when the run is a stand-in's (cli/run_settings.py):
        a shorter run than mlperf.conf's (a stand-in is no MLPerf result), long enough for
        LoadGen to call it VALID."""
        return HarnessSettings(
            min_duration_ms=STAND_IN_SECONDS * 1000,
            min_query_count=STAND_IN_QUERIES[scenario.loadgen],
        )

    def expects_stand_in(self, options: RunOptions) -> bool:
        """Whether `prepare` would run a stand-in (PreparedRun.stand_in), told from what is on
        disk without building anything, for --show_config and a submission's estimates."""
        return False

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        """Files a run reads that its arguments and settings do not name (default model and data
        paths): a resumed submission reruns a step when one of them changed."""
        return ()

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport | None:
        """Score the accuracy log LoadGen just wrote; None for a benchmark without a metric."""
        return None

    def eos_token_id(self, options: RunOptions) -> int | None:
        """A generative benchmark's end-of-sequence token for the run's model (TEST06 checks
        it); None for the others."""
        return None

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float | None:
        """The metric over whichever samples `accuracy_log` holds, for the data the options name
        (TEST01 scores an audit run's sampled responses this way); None without a metric."""
        return None
