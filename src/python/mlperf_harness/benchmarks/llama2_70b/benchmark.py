"""Llama2-70B on OpenOrca: MLPerf's datacenter LLM benchmark (llama2-70b-99.9 in v6.1; Offline
required, Server and Interactive optional): each sample's prompt generates up to 1,024 tokens by
greedy decoding, answered by the serving loop (generation/serving.py), which reports each sample's
first token as soon as it exists (LoadGen's use_token_latencies: time to first token, time per
output token); results are tokens per second."""

from __future__ import annotations

import sys
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
    RougeBenchmark,
    RougeChoice,
    refuse_accuracy_of_real_size,
)
from mlperf_harness.benchmarks.spec import STAND_IN_SECONDS, PreparedRun, counted_samples
from mlperf_harness.cli.options import DEFAULT_CONFIG_VER, HIGH_ACCURACY, RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.open_orca.samples import OrcaDataset, read_dataset
from mlperf_harness.datasets.open_orca.tokenizer import EOS_ID, load_llama_tokenizer
from mlperf_harness.generation.prompts import ForcedLengths, PromptStore
from mlperf_harness.generation.real_size import Marker, read_marker
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.records import read_record
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 24_576  # mlperf.conf's: every sample of the processed set
DATA_FILE_NAME = "open_orca_gpt4_tokenized_llama.sampled_24576.pkl"  # processorca.py's
TOKEN_DTYPES = ("int32", "int64")  # what evaluate-accuracy.py reads (--dtype; the reference: int32)

_RULES = model_rules("llama2-70b-99.9", "v6.1")
STAND_IN_QUESTIONS = stand_in.HELD_OUT_COUNT


Llama2Choice = RougeChoice[OrcaDataset, LlamaShape]


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "llama2-70b"


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "open_orca"


class Llama2(RougeBenchmark[OrcaDataset, LlamaShape]):
    name = configs.NAME
    submission_model = _RULES.model
    # v6.1 lists only llama2-70b-99.9: both config versions stage as it.
    submission_models = MappingProxyType(
        {DEFAULT_CONFIG_VER: _RULES.model, HIGH_ACCURACY: _RULES.model}
    )
    audit_tests = _RULES.audits
    response_dtype = TOKEN_DTYPES[0]
    title = "Llama 2"
    rules = _RULES
    official_target = LLAMA2_70B_TARGET
    token_dtypes = TOKEN_DTYPES
    data_file_name = DATA_FILE_NAME
    stand_in_data = "questions"
    default_model_path = staticmethod(default_model_path)
    default_data_dir = staticmethod(default_data_dir)
    load_tokenizer = staticmethod(load_llama_tokenizer)
    read_dataset = staticmethod(read_dataset)

    def missing_data(self, data_dir: Path) -> str:
        return (
            f"no {DATA_FILE_NAME} in {data_dir}: make it with MLCommons' processorca.py from the "
            "OpenOrca GPT-4 partition (language/llama2-70b/README.md), or put it there"
        )

    def accuracy_line(self, scores: RougeScores) -> str:
        return scores.llama2_line()

    def choose_stand_in(self, scratch: Path) -> Llama2Choice:
        built = stand_in.ensure_stand_in(scratch)
        record = built.record
        return self.stand_in_choice(
            built,
            stand_in.reference_target(record),
            stand_in.shape_of(record),
            f", {record.heldout_tokens_per_sample} tokens per sample",
        )

    def stand_in_target(self, record: Path) -> RougeTarget | None:
        found = read_record(stand_in.StandInRecord, record)
        return None if found is None else stand_in.reference_target(found)

    def stand_in_run(self, scenario: Scenario) -> HarnessSettings:
        # Server's and Interactive's runs take one pass over the stand-in's 60 questions (LoadGen's
        # sample_concatenate_permutation rounds the query count up to whole passes anyway), short
        # of the queries LoadGen's early stopping needs for TTFT and TPOT; so only Offline is
        # VALID by design, and the others show the token latencies this machine reaches.
        queries = 1 if scenario is Scenario.OFFLINE else STAND_IN_QUESTIONS
        return HarnessSettings(min_duration_ms=STAND_IN_SECONDS * 1000, min_query_count=queries)

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        rules = self.rules_for(options)
        marker = read_marker(options.model_path)
        if marker is not None:
            return self._prepare_real_size(marker, options, settings)
        choice = self.choose(options)
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
        return self.prepared_run(choice, options, rules, store, make_engines)

    def _prepare_real_size(
        self, marker: Marker, options: RunOptions, settings: HarnessSettings
    ) -> PreparedRun:
        refuse_accuracy_of_real_size(marker.path, options)
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
                tensor_parallel=settings.tensor_parallel or 1,
                prefill=settings.prefill,
            ),
        )


BENCHMARK = Llama2()
