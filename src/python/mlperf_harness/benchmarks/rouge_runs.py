"""What the ROUGE benchmarks (GPT-J, Llama2-70B) share: the inputs a run chooses (the official
checkpoint with its tokenizer and data set, or the stand-in), the token ids they log, and how an
accuracy run is judged: the scoring of an accuracy log with the run's tokenizer, references and
sentence model, the target it is judged against (the official figures, or a stand-in's own
held-out ones), and the report: the line MLCommons' script prints, written as accuracy.txt, and
result.json's accuracy record. `RougeBenchmark` is the base of both benchmarks."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from mlperf_harness.accuracy.rouge import (
    Decode,
    RougeScores,
    RougeTarget,
    SentenceSplitter,
    score_accuracy_log,
)
from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.spec import AccuracyReport, Benchmark, PreparedRun
from mlperf_harness.cli.options import RunOptions
from mlperf_harness.datasets.cnn_dailymail.tokenizer import BpeTokenizer
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.stand_in_files import Built, Record
from mlperf_harness.harness.sample_store import SampleStore
from mlperf_harness.loadgen.results import ACCURACY_FILE
from mlperf_harness.run_files import ACCURACY_TXT
from mlperf_harness.submission.rules import ModelRules

NLTK_DATA_DIR = "nltk_data"  # beside the data: nltk's punkt_tab (GPT-J's download_data puts it)


class RougeDataset(Protocol):
    """What scoring needs of a data set: where it was read from and each sample's reference."""

    @property
    def source(self) -> str: ...

    @property
    def references(self) -> Sequence[str]: ...


class StandInFigures(Record, Protocol):
    """What a ROUGE stand-in's record says of it that a run shows."""

    @property
    def shape(self) -> str: ...
    @property
    def heldout_rouge1(self) -> float: ...
    @property
    def heldout_rouge2(self) -> float: ...
    @property
    def heldout_rougeL(self) -> float: ...


class BuiltStandIn(Built, Protocol):
    """A ROUGE stand-in's files and record, as its `ensure_stand_in` returns them."""

    @property
    def nltk_data(self) -> Path: ...
    @property
    def record(self) -> StandInFigures: ...
    @property
    def record_path(self) -> Path: ...


DatasetT = TypeVar("DatasetT", bound=RougeDataset)
ShapeT = TypeVar("ShapeT")


@dataclass(frozen=True)
class RougeChoice(Generic[DatasetT, ShapeT]):
    """The model, tokenizer, data and sentence model a run uses, and what they are."""

    model: Path
    tokenizer: BpeTokenizer
    data: DatasetT
    nltk_data: Path | None  # None: nltk's own search path
    stand_in: bool
    reference: RougeTarget  # what 99% (99.9%) is judged against
    model_sha256: str | None
    origin: str
    shape: ShapeT | None = None  # the stand-in's (the official checkpoint's is its config's)
    record: Path | None = None  # the stand-in's record of what it measured

    def provenance(self) -> dict[str, str]:
        """What result.json records of the inputs; `scoring_of` reads the files back from it."""
        return {
            "model": self.origin,
            "tokenizer": self.tokenizer.source,
            "data": self.data.source,
            **({"nltk_data_dir": str(self.nltk_data)} if self.nltk_data else {}),
            **({"stand_in_record": str(self.record)} if self.record else {}),
        }


@dataclass(frozen=True)
class Scoring:
    """What an accuracy log is scored with: the run's tokenizer, references and sentence model."""

    decode: Decode
    references: Sequence[str]
    nltk_data: Path | None
    reference: RougeTarget

    def score(self, accuracy_log: Path, dtype: str) -> RougeScores:
        return score_accuracy_log(
            accuracy_log, self.references, self.decode, SentenceSplitter(self.nltk_data), dtype
        )


def run_target(
    prepared: PreparedRun,
    official: RougeTarget,
    stand_in_target: Callable[[Path], RougeTarget | None],
) -> RougeTarget:
    """The target of a prepared run: a stand-in's own held-out figures (from the record its
    provenance names), else the official ones."""
    record = prepared.provenance.get("stand_in_record")
    if not (prepared.stand_in and record):
        return official
    target = stand_in_target(Path(record))
    if target is None:
        raise HarnessError(f"the stand-in's record {record} is gone")
    return target


def nltk_data_of(prepared: PreparedRun) -> Path | None:
    nltk_data = prepared.provenance.get("nltk_data_dir")
    return Path(nltk_data) if nltk_data else None


def accuracy_report(
    log_dir: Path,
    prepared: PreparedRun,
    scoring: Scoring,
    line: Callable[[RougeScores], str],
    default_fraction: float,
) -> AccuracyReport:
    """Score the run's accuracy log, write `line(scores)` as accuracy.txt, judge it."""
    scores = scoring.score(log_dir / ACCURACY_FILE, prepared.response_dtype or "int64")
    text = line(scores)
    write_text_atomic(log_dir / ACCURACY_TXT, text + "\n")
    fraction = prepared.accuracy_fraction or default_fraction
    reference = scoring.reference
    misses = reference.misses(scores, fraction)
    record: dict[str, Any] = {
        "rouge1": scores.rouge1,
        "rouge2": scores.rouge2,
        "rougeL": scores.rougeL,
        "rougeLsum": scores.rougeLsum,
        "gen_len": scores.gen_len,
        "gen_num": scores.gen_num,
        "gen_tok_len": scores.gen_tok_len,
        "tokens_per_sample": scores.tokens_per_sample,
        "reference": {
            "rouge1": reference.rouge1,
            "rouge2": reference.rouge2,
            "rougeL": reference.rougeL,
            "gen_len": reference.gen_len,
            "tokens_per_sample": reference.tokens_per_sample,
        },
        "target_fraction": fraction,
        "misses": misses,
        "passed": not misses,
    }
    return AccuracyReport(text, record, not misses)


class RougeBenchmark(Benchmark, Generic[DatasetT, ShapeT]):
    """A ROUGE benchmark: its checkpoint directory and data file (or, with neither, its stand-in),
    token ids logged as one of `token_dtypes`, and accuracy runs judged by ROUGE against the
    official target or the stand-in's own held-out figures."""

    accuracy_log_sampling_target = None  # no TEST01: TEST06 audits the token ids
    input_data_type = "int32"  # what a sample feeds the engine: token ids
    title: str  # how messages name the model ("GPT-J")
    rules: ModelRules  # the round's: the accuracy fraction a run without its own is judged by
    official_target: RougeTarget
    token_dtypes: tuple[str, ...]  # what the accuracy script reads (--dtype), the default first
    data_file_name: str
    stand_in_data: str  # what the stand-in runs on ("articles")

    # -- what each benchmark says -------------------------------------------------------------

    def default_model_path(self, scratch: Path) -> Path:
        raise NotImplementedError

    def default_data_dir(self, scratch: Path) -> Path:
        raise NotImplementedError

    def missing_data(self, data_dir: Path) -> str:
        """The line that says the data file is not in `data_dir` and how to get it."""
        raise NotImplementedError

    def choose_stand_in(self, scratch: Path) -> RougeChoice[DatasetT, ShapeT]:
        """The stand-in (built when absent) and its generated data."""
        raise NotImplementedError

    def load_tokenizer(self, directory: Path) -> BpeTokenizer:
        raise NotImplementedError

    def read_dataset(self, path: Path) -> DatasetT:
        raise NotImplementedError

    def stand_in_target(self, record: Path) -> RougeTarget | None:
        """The held-out figures of the stand-in record at `record`; None where it is unreadable."""
        raise NotImplementedError

    def accuracy_line(self, scores: RougeScores) -> str:
        """The line the benchmark's accuracy script prints."""
        raise NotImplementedError

    # -- what they share ----------------------------------------------------------------------

    def stand_in_choice(
        self, built: BuiltStandIn, reference: RougeTarget, shape: ShapeT, figures: str = ""
    ) -> RougeChoice[DatasetT, ShapeT]:
        """The choice of a built stand-in, judged against `reference` (its held-out figures);
        `figures`: what its origin line shows after its ROUGE."""
        record = built.record
        return RougeChoice(
            built.model,
            self.load_tokenizer(built.tokenizer_dir),
            self.read_dataset(built.data),
            built.nltk_data,
            stand_in=True,
            reference=reference,
            model_sha256=record.sha256,
            origin=f"stand-in model ({record.shape}, held-out ROUGE-1/2/L {record.heldout_rouge1:.2f}"
            f"/{record.heldout_rouge2:.2f}/{record.heldout_rougeL:.2f}{figures})",
            shape=shape,
            record=built.record_path,
        )

    def choose(self, options: RunOptions) -> RougeChoice[DatasetT, ShapeT]:
        """The official checkpoint directory (--model_path, default under the scratch path) with
        its tokenizer and data file, or, with no model, the stand-in and its generated data."""
        scratch = options.scratch_path
        model = options.model_path or self.default_model_path(scratch)
        if options.model_path is None and not model.is_dir():
            if options.data_dir is not None:
                raise HarnessError(
                    f"--data_dir {options.data_dir} needs {self.title}'s tokenizer: give "
                    "--model_path (the checkpoint directory); the stand-in runs only on its own "
                    f"generated {self.stand_in_data}"
                )
            return self.choose_stand_in(scratch)
        if not model.is_dir():
            raise HarnessError(f"{self.title} checkpoint directory not found: {model}")
        data_dir = options.data_dir or self.default_data_dir(scratch)
        data_file = data_dir / self.data_file_name
        if not data_file.is_file():
            raise HarnessError(self.missing_data(data_dir))
        nltk_data = data_dir / NLTK_DATA_DIR
        return RougeChoice(
            model,
            self.load_tokenizer(model),
            self.read_dataset(data_file),
            nltk_data if nltk_data.is_dir() else None,
            stand_in=False,
            reference=self.official_target,
            model_sha256=None,
            origin=str(model),
        )

    def prepared_run(
        self,
        choice: RougeChoice[DatasetT, ShapeT],
        options: RunOptions,
        rules: ModelRules,
        store: SampleStore,
        make_engines: Callable[[], Sequence[Callable[[], DecoderEngine]]],
    ) -> PreparedRun:
        """The run of `choice` under the round's `rules`; a stand-in says on stderr what it is."""
        if choice.stand_in:
            print(f"{self.name}: {choice.origin}; {choice.data.source}", file=sys.stderr)
        return PreparedRun(
            store=store,
            backend_options=BackendOptions(model_path=choice.model),
            stand_in=choice.stand_in,
            model_sha256=choice.model_sha256,
            provenance=choice.provenance(),
            accuracy_fraction=rules.accuracy_fraction,
            response_dtype=self.response_dtype_for(options),
            make_engines=make_engines,
        )

    def response_dtype_for(self, options: RunOptions) -> str:
        dtype = options.output_dtype or self.response_dtype
        if dtype not in self.token_dtypes:
            raise HarnessError(
                f"{self.name} logs token ids as {' or '.join(self.token_dtypes)}, not "
                f"--output_dtype {dtype}"
            )
        return dtype

    def expects_stand_in(self, options: RunOptions) -> bool:
        model = options.model_path or self.default_model_path(options.scratch_path)
        return not model.is_dir()

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        scratch = options.scratch_path
        data_dir = options.data_dir or self.default_data_dir(scratch)
        model = options.model_path or self.default_model_path(scratch)
        return (model / "config.json", data_dir / self.data_file_name)

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        return accuracy_report(
            log_dir,
            prepared,
            self.scoring_of(prepared),
            self.accuracy_line,
            self.rules.accuracy_fraction,
        )

    def eos_token_id(self, options: RunOptions) -> int:
        return self.choose(options).tokenizer.eos_id

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        choice = self.choose(options)
        scoring = Scoring(
            choice.tokenizer.decode, choice.data.references, choice.nltk_data, choice.reference
        )
        return scoring.score(accuracy_log, self.response_dtype_for(options)).rouge1

    def scoring_of(self, prepared: PreparedRun) -> Scoring:
        """The scoring of a prepared run, from the files its provenance names."""
        provenance = prepared.provenance
        return Scoring(
            self.load_tokenizer(Path(provenance["tokenizer"])).decode,
            self.read_dataset(Path(provenance["data"])).references,
            nltk_data_of(prepared),
            run_target(prepared, self.official_target, self.stand_in_target),
        )


def refuse_accuracy_of_real_size(path: Path, options: RunOptions) -> None:
    """A real-size stand-in (random weights) times runs; it has no accuracy to check or audit."""
    if options.test_mode.checks_accuracy or options.audit_test is not None:
        raise HarnessError(
            f"{path} is the real-size stand-in (random weights): it is for timing, it has no "
            "accuracy and no audits"
        )
