"""GPT-J 6B on CNN-DailyMail: MLPerf's summarisation benchmark (gptj-99, and gptj-99.9 with
--config_ver high_accuracy), the first generative one: each sample's prompt generates up to 128
tokens by beam search (4 beams), answered by the serving loop (generation/serving.py)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from mlperf_harness.accuracy.rouge import (
    GPTJ_TARGET,
    RougeScores,
    RougeTarget,
)
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.gptj import configs, stand_in
from mlperf_harness.benchmarks.gptj.calibration import (
    checkpoint_identity,
    official_calibration,
    stand_in_calibration,
)
from mlperf_harness.benchmarks.gptj.decoding import gptj_config
from mlperf_harness.benchmarks.gptj.engines import gptj_engine_factory
from mlperf_harness.benchmarks.gptj.real_size import RealSizeStandIn, find_real_size
from mlperf_harness.benchmarks.gptj.stand_in_model import GPTJ_6B, GptjShape
from mlperf_harness.benchmarks.rouge_runs import (
    RougeBenchmark,
    RougeChoice,
    refuse_accuracy_of_real_size,
)
from mlperf_harness.benchmarks.spec import PreparedRun, counted_samples
from mlperf_harness.cli.options import DEFAULT_CONFIG_VER, HIGH_ACCURACY, RunOptions
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.datasets.cnn_dailymail.samples import SummaryDataset, read_dataset
from mlperf_harness.datasets.cnn_dailymail.store import MANIFEST_NAME as PREPROCESSED_MANIFEST
from mlperf_harness.datasets.cnn_dailymail.store import load_prompts
from mlperf_harness.datasets.cnn_dailymail.store import made_from as prompts_made_from
from mlperf_harness.datasets.cnn_dailymail.tokenizer import (
    GPTJ_EOS_ID,
    PROMPT_MAX_TOKENS,
    load_tokenizer,
)
from mlperf_harness.engines.torch_gptj.calibration_set import (
    StaticScalesPlan,
    real_size_calibration,
    real_size_identity,
)
from mlperf_harness.engines.torch_gptj.scale_artifact import STATIC, check_fp8_activations
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.prompts import ForcedLengths, PromptStore
from mlperf_harness.records import read_record
from mlperf_harness.submission.rules import model_rules

PERFORMANCE_SAMPLE_COUNT = 13_368  # mlperf.conf's: every sample of the validation set
DATA_FILE_NAME = "cnn_eval.json"
TOKEN_DTYPES = ("int64", "int32")  # what the accuracy scripts read (--dtype)

_RULES = model_rules("gptj-99", "v5.0")  # GPT-J's newest round


GptjChoice = RougeChoice[SummaryDataset, GptjShape]


def default_model_path(scratch: Path) -> Path:
    return scratch / "models" / "gptj"


def default_data_dir(scratch: Path) -> Path:
    return scratch / "data" / "cnn_dailymail"


def default_preprocessed_dir(scratch: Path, data_file: Path, tokenizer_dir: Path) -> Path:
    # One directory per (data, tokenizer): two checkpoints' tokenizations never share outputs.
    key = hashlib.sha256(f"{data_file.resolve()}\n{tokenizer_dir.resolve()}".encode()).hexdigest()
    return scratch / "preprocessed" / "cnn_dailymail" / f"{data_file.stem}-{key[:12]}"


def _prompts(choice: GptjChoice, options: RunOptions, total: int) -> list[npt.NDArray[np.int64]]:
    """The first `total` prompts' ids: from the set preprocess_data made of this data with this
    tokenizer where there is one (--preprocessed_dir, which must be that set, or the default
    directory), else tokenized now (the stand-in's always: its articles are few)."""
    if not choice.stand_in:
        data_file = Path(choice.data.source)
        given = options.preprocessed_dir
        directory = given or default_preprocessed_dir(options.scratch_path, data_file, choice.model)
        if given is not None or (directory / PREPROCESSED_MANIFEST).is_file():
            inputs = prompts_made_from(data_file, choice.model, PROMPT_MAX_TOKENS)
            try:
                return load_prompts(directory, inputs).prompts(total)
            except HarnessError as error:
                if given is not None:
                    raise
                print(f"gptj: not using {directory}: {error}", file=sys.stderr)
    return [
        np.array(choice.tokenizer.encode(text, PROMPT_MAX_TOKENS), np.int64)
        for text in choice.data.prompts[:total]
    ]


def _wants_static(settings: HarnessSettings) -> bool:
    """Whether the run asks for static FP8 activation scales (a bad value: one line)."""
    form = settings.fp8_activations
    return form is not None and check_fp8_activations(form, settings.precision or "fp16") == STATIC


def _engine_root(options: RunOptions) -> Path:
    return options.engine_dir or options.scratch_path / "engines"


def _static_plan(choice: GptjChoice, options: RunOptions) -> StaticScalesPlan:
    """The stand-in's own calibration articles, or MLCommons' calibration set for the checkpoint."""
    if choice.stand_in:
        assert choice.model_sha256 is not None  # a stand-in's record holds it
        return StaticScalesPlan(
            choice.model_sha256, stand_in_calibration(choice.tokenizer), _engine_root(options)
        )
    data_dir = options.data_dir or default_data_dir(options.scratch_path)
    return StaticScalesPlan(
        checkpoint_identity(choice.model),
        official_calibration(data_dir, choice.tokenizer),
        _engine_root(options),
    )


class Gptj(RougeBenchmark[SummaryDataset, GptjShape]):
    name = configs.NAME
    submission_model = _RULES.model
    submission_models = MappingProxyType(
        {DEFAULT_CONFIG_VER: "gptj-99", HIGH_ACCURACY: "gptj-99.9"}
    )
    audit_tests = _RULES.audits
    response_dtype = TOKEN_DTYPES[0]
    title = "GPT-J"
    rules = _RULES
    official_target = GPTJ_TARGET
    token_dtypes = TOKEN_DTYPES
    data_file_name = DATA_FILE_NAME
    stand_in_data = "articles"
    default_model_path = staticmethod(default_model_path)
    default_data_dir = staticmethod(default_data_dir)
    load_tokenizer = staticmethod(load_tokenizer)
    read_dataset = staticmethod(read_dataset)

    def missing_data(self, data_dir: Path) -> str:
        return (
            f"no {DATA_FILE_NAME} in {data_dir}: run benchmarks/gptj:download_data, or put "
            "MLCommons' CNN-DailyMail validation set there"
        )

    def accuracy_line(self, scores: RougeScores) -> str:
        return scores.gptj_line()

    def choose_stand_in(self, scratch: Path) -> GptjChoice:
        built = stand_in.ensure_stand_in(scratch)
        record = built.record
        return self.stand_in_choice(
            built, stand_in.reference_target(record), stand_in.shape_of(record)
        )

    def stand_in_target(self, record: Path) -> RougeTarget | None:
        found = read_record(stand_in.StandInRecord, record)
        return None if found is None else stand_in.reference_target(found)

    def prepare(self, options: RunOptions, settings: HarnessSettings) -> PreparedRun:
        rules = self.rules_for(options)
        static = _wants_static(settings)
        real = find_real_size(options.model_path)
        if real is not None:
            return self._prepare_real_size(real, options, settings)
        choice = self.choose(options)
        dataset = choice.data
        total = len(dataset)
        total = counted_samples(options, total, f"samples of {dataset.source}")
        prompts = _prompts(choice, options, total)
        for index, prompt in enumerate(prompts):
            if not prompt.size:
                raise HarnessError(f"{dataset.source}: sample {index} has an empty prompt")
        config = gptj_config(choice.tokenizer.eos_id)
        store = PromptStore(prompts, config, PERFORMANCE_SAMPLE_COUNT)
        backend = settings.backend or configs.Gptj.backend
        make_engines = gptj_engine_factory(
            backend,
            choice.model,
            choice.shape,
            slots=settings.batch_size,
            beams=config.num_beams,
            max_length=store.longest_prompt + config.max_new_tokens,
            eos_id=config.eos_id,
            threads=settings.intra_op_threads,
            workers=settings.worker_count,
            precision=settings.precision,
            static=_static_plan(choice, options) if static else None,
        )
        return self.prepared_run(choice, options, rules, store, make_engines)

    def _prepare_real_size(
        self, real: RealSizeStandIn, options: RunOptions, settings: HarnessSettings
    ) -> PreparedRun:
        refuse_accuracy_of_real_size(real.path, options)
        workload = real.workload()
        total = min(options.count or workload.prompt_lengths.size, workload.prompt_lengths.size)
        config = gptj_config(GPTJ_EOS_ID)
        store = PromptStore(
            workload.prompts(GPTJ_6B.vocab_size)[:total],
            config,
            PERFORMANCE_SAMPLE_COUNT,
            ForcedLengths(workload.output_lengths[:total], real.note),
        )
        print(f"gptj: real-size stand-in: {workload.describe()}", file=sys.stderr)
        backend = settings.backend or configs.Gptj.backend
        return PreparedRun(
            store=store,
            backend_options=BackendOptions(model_path=real.path),
            stand_in=True,
            provenance={"model": f"real-size stand-in ({real.path})", "data": workload.describe()},
            response_dtype=self.response_dtype_for(options),
            make_engines=gptj_engine_factory(
                backend,
                real.path,
                None,
                slots=settings.batch_size,
                beams=config.num_beams,
                max_length=store.longest_prompt + config.max_new_tokens,
                eos_id=config.eos_id,
                threads=settings.intra_op_threads,
                precision=settings.precision,
                real_size=True,
                static=(
                    StaticScalesPlan(
                        real_size_identity(),
                        real_size_calibration(),
                        _engine_root(options),
                    )
                    if _wants_static(settings)
                    else None
                ),
            ),
        )


BENCHMARK = Gptj()
