"""Llama2-70B on OpenOrca: MLPerf's datacenter LLM benchmark (llama2-70b-99.9 in v6.1; Offline
required, Server and Interactive optional): each sample's prompt generates up to 1,024 tokens by
greedy decoding, answered by the serving loop (generation/serving.py), which reports each sample's
first token as soon as it exists (LoadGen's use_token_latencies: time to first token, time per
output token); results are tokens per second."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from mlperf_harness.accuracy.rouge import (
    LLAMA2_70B_TARGET,
    RougeScores,
    RougeTarget,
)
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.llama2_70b import configs, stand_in
from mlperf_harness.benchmarks.llama2_70b.decoding import llama2_config
from mlperf_harness.benchmarks.llama2_70b.engines import llama2_engine_factory
from mlperf_harness.benchmarks.llama2_70b.model import LLAMA2_70B, LlamaShape
from mlperf_harness.benchmarks.llama2_70b.real_size import draw_workload
from mlperf_harness.benchmarks.rouge_runs import (
    Scoring,
    accuracy_report,
    nltk_data_of,
    run_target,
)
from mlperf_harness.benchmarks.spec import (
    STAND_IN_SECONDS,
    AccuracyReport,
    Benchmark,
    PreparedRun,
    counted_samples,
)
from mlperf_harness.cli.options import DEFAULT_CONFIG_VER, HIGH_ACCURACY, RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.cnn_dailymail.tokenizer import BpeTokenizer
from mlperf_harness.datasets.open_orca.samples import OrcaDataset, read_dataset
from mlperf_harness.datasets.open_orca.tokenizer import EOS_ID, load_llama_tokenizer
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.prompts import ForcedLengths, PromptStore
from mlperf_harness.generation.real_size import Marker, read_marker
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.records import read_record
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 24_576  # mlperf.conf's: every sample of the processed set
DATA_FILE_NAME = "open_orca_gpt4_tokenized_llama.sampled_24576.pkl"  # processorca.py's
TOKEN_DTYPES = ("int32", "int64")  # what evaluate-accuracy.py reads (--dtype; the reference: int32)
NLTK_DATA_DIR = "nltk_data"  # beside the data, as for GPT-J

_RULES = model_rules("llama2-70b-99.9", "v6.1")
STAND_IN_QUESTIONS = stand_in.HELD_OUT_COUNT


@dataclass(frozen=True)
class Llama2Choice:
    """The model, tokenizer, data and sentence model a run uses, and what they are."""

    model: Path
    tokenizer: BpeTokenizer
    data: OrcaDataset
    nltk_data: Path | None  # None: nltk's own search path
    stand_in: bool
    reference: RougeTarget
    model_sha256: str | None
    origin: str
    shape: LlamaShape | None = None  # the stand-in's
    record: Path | None = None  # the stand-in's record of what it measured


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "llama2-70b"


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "open_orca"


def choose(options: RunOptions) -> Llama2Choice:
    """The official checkpoint directory (--model_path, default under the scratch path) with its
    tokenizer and processorca's data set, or, with no model, the stand-in and its generated pairs."""
    scratch = options.scratch_path
    model = options.model_path or default_model_path(scratch)
    if options.model_path is None and not model.is_dir():
        if options.data_dir is not None:
            raise HarnessError(
                f"--data_dir {options.data_dir} needs Llama 2's tokenizer: give --model_path (the "
                "checkpoint directory); the stand-in runs only on its own generated questions"
            )
        built = stand_in.ensure_stand_in(scratch)
        record = built.record
        return Llama2Choice(
            built.model,
            load_llama_tokenizer(built.tokenizer_dir),
            read_dataset(built.data),
            built.nltk_data,
            stand_in=True,
            reference=stand_in.reference_target(record),
            model_sha256=record.sha256,
            origin=f"stand-in model ({record.shape}, held-out ROUGE-1/2/L {record.heldout_rouge1:.2f}"
            f"/{record.heldout_rouge2:.2f}/{record.heldout_rougeL:.2f}, "
            f"{record.heldout_tokens_per_sample} tokens per sample)",
            shape=stand_in.shape_of(record),
            record=built.record_path,
        )
    if not model.is_dir():
        raise HarnessError(f"Llama 2 checkpoint directory not found: {model}")
    data_dir = options.data_dir or default_data_dir(scratch)
    data_file = data_dir / DATA_FILE_NAME
    if not data_file.is_file():
        raise HarnessError(
            f"no {DATA_FILE_NAME} in {data_dir}: make it with MLCommons' processorca.py from the "
            "OpenOrca GPT-4 partition (language/llama2-70b/README.md), or put it there"
        )
    nltk_data = data_dir / NLTK_DATA_DIR
    return Llama2Choice(
        model,
        load_llama_tokenizer(model),
        read_dataset(data_file),
        nltk_data if nltk_data.is_dir() else None,
        stand_in=False,
        reference=LLAMA2_70B_TARGET,
        model_sha256=None,
        origin=str(model),
    )


class Llama2(Benchmark):
    name = configs.NAME
    submission_model = _RULES.model
    # v6.1 lists only llama2-70b-99.9: both config versions stage as it.
    submission_models = MappingProxyType(
        {DEFAULT_CONFIG_VER: _RULES.model, HIGH_ACCURACY: _RULES.model}
    )
    audit_tests = _RULES.audits
    accuracy_log_sampling_target = None  # no TEST01
    response_dtype = "int32"
    input_data_type = "int32"  # token ids

    def stand_in_run(self, scenario: Scenario) -> HarnessSettings:
        # Answers of up to 1,024 tokens at about a sample a second on a 2-core CPU: Server's and
        # Interactive's runs take one pass over the stand-in's 60 questions (minutes), short of
        # the queries LoadGen's early stopping needs for TTFT and TPOT; so only Offline is VALID
        # by design, and the others show the token latencies this machine reaches.
        queries = 1 if scenario is Scenario.OFFLINE else STAND_IN_QUESTIONS
        return HarnessSettings(min_duration_ms=STAND_IN_SECONDS * 1000, min_query_count=queries)

    def response_dtype_for(self, options: RunOptions) -> str:
        dtype = options.output_dtype or self.response_dtype
        if dtype not in TOKEN_DTYPES:
            raise HarnessError(
                f"llama2-70b logs token ids as {' or '.join(TOKEN_DTYPES)}, not --output_dtype "
                f"{dtype}"
            )
        return dtype

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        rules = self.rules_for(options)
        marker = read_marker(options.model_path)
        if marker is not None:
            return self._prepare_real_size(marker, options, settings)
        choice = choose(options)
        dataset = choice.data
        total = counted_samples(options, len(dataset), f"samples of {dataset.source}")
        config = llama2_config(choice.tokenizer.eos_id)
        store = PromptStore(list(dataset.prompts[:total]), config, PERFORMANCE_SAMPLE_COUNT)
        backend = settings.backend or configs.Llama2.backend
        make_engines = llama2_engine_factory(
            backend,
            choice.model,
            choice.shape,
            slots=settings.batch_size,
            max_length=store.longest_prompt + config.max_new_tokens,
            eos_id=config.eos_id,
            threads=settings.intra_op_threads,
            workers=settings.worker_count,
        )
        if choice.stand_in:
            print(f"llama2-70b: {choice.origin}; {dataset.source}", file=sys.stderr)
        return PreparedRun(
            store=store,
            backend_options=BackendOptions(model_path=choice.model),
            stand_in=choice.stand_in,
            model_sha256=choice.model_sha256,
            provenance={
                "model": choice.origin,
                "tokenizer": choice.tokenizer.source,
                "data": dataset.source,
                **({"nltk_data_dir": str(choice.nltk_data)} if choice.nltk_data else {}),
                **({"stand_in_record": str(choice.record)} if choice.record else {}),
            },
            accuracy_fraction=rules.accuracy_fraction,
            response_dtype=self.response_dtype_for(options),
            make_engines=make_engines,
        )

    def _prepare_real_size(
        self, marker: Marker, options: RunOptions, settings: HarnessSettings
    ) -> PreparedRun:
        if options.test_mode.checks_accuracy or options.audit_test is not None:
            raise HarnessError(
                f"{marker.path} is the real-size stand-in (random weights): it is for timing, it "
                "has no accuracy and no audits"
            )
        workload = draw_workload(marker.samples, marker.seed)
        total = min(options.count or marker.samples, marker.samples)
        config = llama2_config(EOS_ID)
        store = PromptStore(
            workload.prompts(LLAMA2_70B.vocab_size)[:total],
            config,
            PERFORMANCE_SAMPLE_COUNT,
            ForcedLengths(workload.output_lengths[:total], workload.note),
        )
        print(f"llama2-70b: real-size stand-in: {workload.describe()}", file=sys.stderr)
        return PreparedRun(
            store=store,
            backend_options=BackendOptions(model_path=marker.path),
            stand_in=True,
            provenance={
                "model": f"real-size stand-in ({marker.path})",
                "data": workload.describe(),
            },
            response_dtype=self.response_dtype_for(options),
            make_engines=llama2_engine_factory(
                settings.backend or configs.Llama2.backend,
                marker.path,
                None,
                slots=settings.batch_size,
                max_length=store.longest_prompt + config.max_new_tokens,
                eos_id=config.eos_id,
                threads=settings.intra_op_threads,
                real_size=True,
                precision=settings.precision,
            ),
        )

    def expects_stand_in(self, options: RunOptions) -> bool:
        model = options.model_path or default_model_path(options.scratch_path)
        return not model.is_dir()

    def input_files(self, options: RunOptions) -> tuple[Path, ...]:
        scratch = options.scratch_path
        data_dir = options.data_dir or default_data_dir(scratch)
        model = options.model_path or default_model_path(scratch)
        return (model / "config.json", data_dir / DATA_FILE_NAME)

    def check_accuracy(self, log_dir: Path, prepared: PreparedRun) -> AccuracyReport:
        return accuracy_report(
            log_dir,
            prepared,
            _scoring_of(prepared),
            RougeScores.llama2_line,
            _RULES.accuracy_fraction,
        )

    def eos_token_id(self, options: RunOptions) -> int:
        return choose(options).tokenizer.eos_id

    def score_accuracy_log(self, accuracy_log: Path, options: RunOptions) -> float:
        choice = choose(options)
        scoring = Scoring(
            choice.tokenizer.decode, choice.data.references, choice.nltk_data, choice.reference
        )
        return scoring.score(accuracy_log, self.response_dtype_for(options)).rouge1


def _scoring_of(prepared: PreparedRun) -> Scoring:
    """The scoring of a prepared run, from the files its provenance names."""
    provenance = prepared.provenance

    def stand_in_target(path: Path) -> RougeTarget | None:
        record = read_record(stand_in.StandInRecord, path)
        return None if record is None else stand_in.reference_target(record)

    return Scoring(
        load_llama_tokenizer(Path(provenance["tokenizer"])).decode,
        read_dataset(Path(provenance["data"])).references,
        nltk_data_of(prepared),
        run_target(prepared, LLAMA2_70B_TARGET, stand_in_target),
    )


BENCHMARK = Llama2()
