"""The shared command line. These flag names are a contract that users' scripts rely on: add flags,
never rename them."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.backends.registry import backend_names
from mlperf_harness.cli.parsing import (
    OneLineParser,
    add_scratch_flag,
    non_negative_int,
    positive_float,
    positive_int,
    scratch_path,
)
from mlperf_harness.config.fields import PRECISIONS, HarnessSettings, describe_fields
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.paths import LOADGEN_PATHS, NATIVE
from mlperf_harness.loadgen.settings import Scenario, TestMode
from mlperf_harness.submission.rounds import DEFAULT_ROUND, ROUND_NAMES, parse_round
from mlperf_harness.submission.rules import AuditTest
from mlperf_harness.systems.custom import DEFAULT_CONFIG_DIR
from mlperf_harness.triton.addresses import ServerAddress, parse_servers

FAST_MIN_DURATION_MS = 60_000  # --fast: the one-minute runs NVIDIA's tooling calls "fast"
# --config_ver, NVIDIA's name: which variant of a benchmark runs. "high_accuracy" is the 99.9%
# submission model (bert-99.9) where a benchmark has one.
DEFAULT_CONFIG_VER = "default"
HIGH_ACCURACY = "high_accuracy"
CONFIG_VERS = (DEFAULT_CONFIG_VER, HIGH_ACCURACY)
# --output_dtype: the type of each logged response value, where a benchmark lets the run choose.
OUTPUT_DTYPES = ("float32", "float16")
# --harness: who runs the model. "direct": this process's runners; "triton": Triton servers
# (mlperf_harness/triton), given by --triton_servers or, without it, one started here.
HARNESSES = ("direct", "triton")
# --triton_response: what a server sends back per sample: the runner's raw output, postprocessed
# here as the direct harness does, or the benchmark's postprocessed answer, computed there.
TRITON_RESPONSES = ("output", "answer")
# --triton_samples: how a batch's samples reach a server. "wire": the preprocessed arrays travel in
# each request (any server of the benchmark can answer); "staged": each server holds the samples
# LoadGen loads, from its own copy of the same preprocessed data, and a request carries only their
# indices (NVIDIA's Triton harness keeps the QSL in memory the server reads, for the same reason:
# at GPU rates fp32 ResNet-50 samples are 18 GB/s per GPU).
TRITON_SAMPLES = ("wire", "staged")


@dataclass(frozen=True)
class TritonOptions:
    """The Triton harness's flags (docs/triton.md)."""

    servers: tuple[ServerAddress, ...] = ()  # empty: start one local server
    inflight: int = 4  # batches in flight per server
    # A server that holds batches and answers nothing this long is taken for lost. Its silence
    # counts, not a batch's age: a server answering a long queue in order is alive (a CPU's
    # ResNet-50 batch takes seconds).
    timeout_s: float = 30.0
    response: str = "output"
    samples: str = "wire"
    all_lost_grace_s: float = 5.0  # with every server lost, how long to wait for one to return


@dataclass(frozen=True)
class RunOptions:
    scenario: Scenario
    test_mode: TestMode
    audit_test: AuditTest | None  # a compliance audit run (a performance run LoadGen audits)
    overrides: HarnessSettings  # the tunable settings given as flags: the top config layer
    log_dir: Path | None
    system_name: str | None
    user_conf: Path | None
    fast: bool
    model_path: Path | None
    data_dir: Path | None
    preprocessed_dir: Path | None
    engine_dir: Path | None
    scratch_path: Path
    count: int | None
    config_dir: Path
    show_config: bool
    argv: tuple[str, ...] = ()  # the arguments as given, recorded with the run's results
    config_ver: str = DEFAULT_CONFIG_VER  # recorded in result.json
    output_dtype: str | None = None  # None: the benchmark's own response type
    harness: str = "direct"  # --harness
    triton: TritonOptions = TritonOptions()
    round: str = DEFAULT_ROUND  # --round: the MLPerf round the run is for (its seeds, its audits)


# Flags that set a HarnessSettings field of the same name: (type, help).
_SETTING_FLAGS: dict[str, tuple[Callable[[str], object], str]] = {
    "backend": (
        str,
        f"inference backend: {', '.join(backend_names())} (default: the benchmark's config)",
    ),
    "precision": (str, f"engine precision: {', '.join(PRECISIONS)}"),
    "batch_size": (positive_int, "samples per inference call"),
    "worker_count": (positive_int, "harness worker threads"),
    "intra_op_threads": (positive_int, "CPU threads the backend may use per call"),
    "server_batch_timeout_us": (non_negative_int, "Server: longest wait to fill a batch"),
    "server_length_buckets": (
        positive_int,
        "Server: batches of like lengths from this many length-range queues (RNN-T's GPU configs)",
    ),
    "gpu_inference_streams": (positive_int, "GPU backends: runners (threads, streams) per GPU"),
    "start_from_device": (bool, "GPU backends: hold the loaded samples in GPU memory"),
    "end_on_device": (bool, "GPU backends: reduce outputs on the GPU, copy back the result"),
    "embedding_placement": (str, "DLRM-v2, torch: embedding tables replicated or sharded"),
    "embedding": (
        str,
        "DLRM-v2, torch: how the lookups are pooled: kernel (our Triton kernel, fp16 rows, the "
        "default), torch (embedding_bag) or kernel-int8 (int8 rows)",
    ),
    "cross": (
        str,
        "DLRM-v2, torch: the cross layers' update: torch (addmm, addcmul; the default) or kernel "
        "(our Triton kernel, one pass; fp16)",
    ),
    "nms": (
        str,
        "RetinaNet, torch: the engine's NMS: scan (Triton kernels, the default) or rounds",
    ),
    "fp8_activations": (
        str,
        "GPT-J, torch, --precision fp8: activations quantized per token on the fly (row, the "
        "default) or by static scales calibrated on the calibration samples (static)",
    ),
    "prefill": (
        str,
        "Llama2-70B, torch: packed (the default), static (one prompt a call under a CUDA graph) "
        "or serial",
    ),
    "tensor_parallel": (positive_int, "LLMs, torch: GPUs per engine (tensor parallel)"),
    "admit_batch": (
        positive_int,
        "LLMs: admit waiting samples once this many slots can take them or the oldest has "
        "waited this many steps (default 1)",
    ),
    "engine_processes": (
        bool,
        "LLMs: each serving loop's engine in a process of its own (several GPUs: no shared "
        "interpreter)",
    ),
    "sim_gpus": (positive_int, "sim backend: how many GPUs to simulate"),
    "sim_latency_table": (str, "sim backend: batch -> device time, a preset or a JSON file"),
    "loadgen_path": (
        str,
        f"which LoadGen runs the test: {' or '.join(LOADGEN_PATHS)} (default python: "
        "mlperf_loadgen; native: LoadGen's C++ in our module, docs/scaling.md)",
    ),
    "native_round_trips": (
        bool,
        "SingleStream/MultiStream, native LoadGen, torch: launch the round trip graphs from C++",
    ),
    "order_by_length": (
        bool,
        "Offline: batches of samples of about the same length (RNN-T's utterances; default on)",
    ),
    "min_duration_ms": (positive_int, "LoadGen minimum test duration"),
    "min_query_count": (positive_int, "LoadGen minimum query count"),
    "offline_expected_qps": (positive_float, "Offline: expected samples/s"),
    "server_target_qps": (positive_float, "Server: target queries/s"),
    "single_stream_expected_latency_ns": (positive_int, "SingleStream: expected query latency"),
    "multi_stream_expected_latency_ns": (positive_int, "MultiStream: expected query latency"),
}


def build_parser(prog: str, default_round: str = DEFAULT_ROUND) -> argparse.ArgumentParser:
    """`default_round`: a benchmark's own (Benchmark.default_round: DLRM-v2's last round is v5.1)."""
    parser = OneLineParser(
        prog=prog,
        description="Run an MLPerf Inference benchmark under LoadGen.",
        epilog="Settings a config may hold (flags set the ones above):\n" + describe_fields(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add(
        "--scenario",
        type=Scenario.parse,
        default=Scenario.OFFLINE,
        help="Offline, Server, SingleStream or MultiStream (each target sets its own)",
    )
    add(
        "--test_mode",
        type=TestMode.parse,
        default=TestMode.PERFORMANCE_ONLY,
        help="PerformanceOnly (default), AccuracyOnly, SubmissionRun or FindPeakPerformance",
    )
    add(
        "--audit_test",
        type=AuditTest.parse,
        help="run a compliance audit (TEST01, TEST04: those the benchmark needs) instead of a "
        "normal performance run",
    )
    for name, (kind, help_text) in _SETTING_FLAGS.items():
        if kind is bool:  # --name / --no-name; neither leaves the config's value
            add(f"--{name}", action=argparse.BooleanOptionalAction, help=help_text)
        else:
            add(f"--{name}", type=kind, help=help_text)
    add(
        "--log_dir",
        type=Path,
        help="where LoadGen's logs and result.json go (default: build/logs/<time>/<system>/...)",
    )
    add("--system_name", help="system id for configs and the log path (default: detected)")
    add("--user_conf", type=Path, help="a LoadGen user.conf applied over mlperf.conf")
    add(
        "--fast",
        action="store_true",
        help=f"cap the minimum duration at {FAST_MIN_DURATION_MS // 1000} s",
    )
    add(
        "--model_path", type=Path, help="model file (default: from the scratch path, else stand-in)"
    )
    add(
        "--data_dir", type=Path, help="raw dataset (default: from the scratch path, else generated)"
    )
    add("--preprocessed_dir", type=Path, help="preprocessed samples (default: under scratch path)")
    add("--engine_dir", type=Path, help="the engine cache (default: <scratch path>/engines)")
    add_scratch_flag(parser)
    add(
        "--count",
        type=positive_int,
        help="use only the first N samples (accuracy runs); more than the data set has is an error",
    )
    add(
        "--config_dir",
        type=Path,
        default=DEFAULT_CONFIG_DIR,
        help=f"custom system configs (default: {DEFAULT_CONFIG_DIR})",
    )
    add(
        "--config_ver",
        choices=CONFIG_VERS,
        default=DEFAULT_CONFIG_VER,
        help="the benchmark's variant: high_accuracy runs the 99.9%% model (bert-99.9)",
    )
    add(
        "--output_dtype",
        choices=OUTPUT_DTYPES,
        help="type of each logged response value, where the benchmark lets the run choose "
        "(BERT's logits; default float32)",
    )
    add("--show_config", action="store_true", help="print the resolved settings and exit")
    add(
        "--round",
        type=parse_round,
        default=default_round,
        help=f"the MLPerf Inference round the run is for: {', '.join(ROUND_NAMES)} (default "
        f"{default_round}); an earlier round's runs use its LoadGen seeds and audits",
    )
    add_harness_flags(parser)
    return parser


def add_harness_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--harness",
        choices=HARNESSES,
        default="direct",
        help="direct (default): run the model here; triton: on Triton servers (docs/triton.md)",
    )
    add(
        "--triton_servers",
        type=_servers,
        help="host:port[,host:port...] of running servers (`<benchmark>:serve`); "
        "default with --harness triton: start one on 127.0.0.1 here",
    )
    add("--triton_inflight", type=positive_int, default=4, help="batches in flight per server")
    add(
        "--triton_timeout_s",
        type=positive_float,
        default=TritonOptions.timeout_s,
        help="a server that holds batches and answers nothing this long is lost; its batches go "
        "to the others "
        "(default %(default)s)",
    )
    add(
        "--triton_response",
        choices=TRITON_RESPONSES,
        default="output",
        help="what servers send back: the raw output (postprocessed here) or the answer",
    )
    add(
        "--triton_samples",
        choices=TRITON_SAMPLES,
        default="wire",
        help="wire (default): each request carries its samples; staged: the servers hold the "
        "loaded samples from their own copy of the same preprocessed data, and requests carry "
        "only indices (docs/triton.md)",
    )


def _servers(text: str) -> tuple[ServerAddress, ...]:
    try:
        return parse_servers(text)
    except HarnessError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_run_options(
    argv: Sequence[str],
    prog: str,
    environ: Mapping[str, str] = os.environ,
    default_round: str = DEFAULT_ROUND,
) -> RunOptions:
    args = build_parser(prog, default_round).parse_args(list(argv))
    return options_from_args(args, argv, environ)


def options_from_args(
    args: argparse.Namespace, argv: Sequence[str], environ: Mapping[str, str] = os.environ
) -> RunOptions:
    """The run's options from parsed flags (a parser that build_parser made, maybe extended)."""
    if args.triton_servers is not None and args.harness != "triton":
        raise HarnessError("--triton_servers needs --harness triton")
    if args.loadgen_path == NATIVE and args.harness == "triton":
        raise HarnessError(
            "--loadgen_path native runs the direct harness only, not --harness triton"
        )
    try:
        overrides = HarnessSettings(**{name: getattr(args, name) for name in _SETTING_FLAGS})
    except HarnessError as error:
        raise HarnessError(f"bad flag: {error}") from error
    return RunOptions(
        scenario=args.scenario,
        test_mode=args.test_mode,
        audit_test=args.audit_test,
        overrides=overrides,
        log_dir=args.log_dir,
        system_name=args.system_name,
        user_conf=args.user_conf,
        fast=args.fast,
        model_path=args.model_path,
        data_dir=args.data_dir,
        preprocessed_dir=args.preprocessed_dir,
        engine_dir=args.engine_dir,
        scratch_path=scratch_path(args.scratch_path, environ),
        count=args.count,
        config_dir=args.config_dir,
        show_config=args.show_config,
        argv=tuple(argv),
        config_ver=args.config_ver,
        output_dtype=args.output_dtype,
        harness=args.harness,
        triton=TritonOptions(
            servers=args.triton_servers or (),
            inflight=args.triton_inflight,
            timeout_s=args.triton_timeout_s,
            response=args.triton_response,
            samples=args.triton_samples,
        ),
        round=args.round or DEFAULT_ROUND,
    )
