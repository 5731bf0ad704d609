"""`pants package benchmarks/<name>:serve`: a Triton Inference Server serving one benchmark's model.

The model runs through our own runners: the benchmark's `prepare` chooses and builds the engines
with the same flags, configs, precision and batch size as the direct harness, and the runners the
backend makes answer side by side (the CPU backends' worker threads; on GPU hosts each GPU's
streams). Two runtimes (--triton_runtime): python_backend (the default, python_backend_server.py),
one instance process of Triton's Python backend per device running that device's runners itself;
pytriton (serve_pytriton), the runners in this process behind PyTriton's `Triton().bind(...)`,
whose proxy adds a trip between processes to every request. Both models are decoupled: clients
send over gRPC streams (wire.py). Triton's dynamic batcher takes its largest and preferred batch
from the config's batch_size and its queue delay from the served scenario's
server_batch_timeout_us (NVIDIA's max_queue_delay_usec; Offline: 0).

The server listens on 127.0.0.1 unless --listen says otherwise; its control APIs (model
repository, shared memory, statistics, trace, logging) take Triton's restricted-protocol key,
--control_key or a random one. SIGTERM or Ctrl-C stops it: Triton answers the requests it holds,
then the runners end.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import secrets
import signal
import socket
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import create_runners
from mlperf_harness.benchmarks.spec import Benchmark, PreparedRun
from mlperf_harness.cli.options import RunOptions, build_parser, options_from_args
from mlperf_harness.cli.parsing import run_entry_point
from mlperf_harness.cli.run_harness import backend_options_for, unique_runners, wrapped_runners
from mlperf_harness.cli.run_settings import prepare_run
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sut import Postprocess
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.submission.rounds import DEFAULT_ROUND
from mlperf_harness.triton import interpreter
from mlperf_harness.triton.addresses import DEFAULT_GRPC_PORT, DEFAULT_LISTEN, check_host
from mlperf_harness.triton.held_samples import HeldSamples, SampleHolder
from mlperf_harness.triton.served_model import (
    ANSWER,
    DIGEST,
    DIGEST_BYTES,
    HOLD,
    IDENTITY,
    KEEPALIVE_MS,
    MODEL_VERSION,
    OUTPUT,
    SAMPLE_IDS,
    SAMPLES,
    VARYING,
    ServedModel,
    from_wire,
    to_wire,
    varying_shapes,
    wire_shape,
)
from mlperf_harness.triton.server_process import READY_LINE, STOPPED_LINE

PROG = "serve"
# Triton's control APIs, closed to anyone without the key (PyTriton's own list).
CONTROL_APIS = ("shared-memory", "model-repository", "statistics", "trace", "logging")
PYTHON_BACKEND = "python_backend"
PYTRITON = "pytriton"
RUNTIMES = (PYTHON_BACKEND, PYTRITON)
EXIT_TIMEOUT_S = 30  # SIGTERM: how long Triton may go on answering the requests it holds


def serve_parser(default_round: str = DEFAULT_ROUND) -> argparse.ArgumentParser:
    """`default_round`: the served benchmark's own (Benchmark.default_round), as its runs have."""
    parser = build_parser(PROG, default_round)
    parser.description = "Serve a benchmark's model over Triton's gRPC (docs/triton.md)."
    add = parser.add_argument
    add("--benchmark_module", required=True, help=argparse.SUPPRESS)  # frozen by the serve target
    add(
        "--listen",
        default=DEFAULT_LISTEN,
        help="address to listen on (default %(default)s: this host only; docs/triton.md says how "
        "to secure a server others can reach)",
    )
    add(
        "--grpc_port", type=_port, default=DEFAULT_GRPC_PORT, help="gRPC port (default %(default)s)"
    )
    add(
        "--control_key",
        help="Triton's restricted-protocol key for its control APIs (default: a random one)",
    )
    add(
        "--triton_runtime",
        choices=RUNTIMES,
        default=PYTHON_BACKEND,
        help="python_backend (default): our runners inside the instance processes of Triton's "
        "Python backend; pytriton: inside this process, behind PyTriton's proxy (docs/triton.md)",
    )
    add(
        "--triton_log",
        type=Path,
        help="Triton's own log (default: <scratch>/triton/<benchmark>-<port>.log)",
    )
    return parser


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"must be a port from 1 to 65535, got {text!r}")
    return int(text)


def load_benchmark_module(module: str) -> Benchmark:
    try:
        found = importlib.import_module(module)
    except ImportError as error:
        raise HarnessError(f"no benchmark module {module}: {error}") from error
    benchmark = getattr(found, "BENCHMARK", None)
    if not isinstance(benchmark, Benchmark):
        raise HarnessError(f"{module} holds no BENCHMARK")
    return benchmark


def stub_path() -> Path:
    from pytriton.utils.distribution import get_stub_path

    return Path(get_stub_path(f"{sys.version_info[0]}.{sys.version_info[1]}"))


def ensure_interpreter(argv: Sequence[str]) -> None:
    """Go on here if this interpreter matches Triton's Python backend, else re-run on one that does
    (interpreter.py); HarnessError if none does."""
    stub = stub_path()
    if not stub.is_file():
        raise HarnessError(
            f"PyTriton has no Python backend stub for CPython {sys.version_info[0]}.{sys.version_info[1]}"
        )
    current = interpreter.this_interpreter()
    found = interpreter.matching_interpreter(stub, current, os.environ.get("PATH"))
    if interpreter.in_own_environment() and found.path == current.path:
        return
    if found.path != current.path:
        print(
            f"{PROG}: running the server on {found.path} (Triton's Python backend links its libpython)",
            file=sys.stderr,
        )
    interpreter.rerun_on(found, "mlperf_harness.triton.serve", argv)


def check_port_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As Triton's gRPC binds: the connections of a server that just died sit in TIME_WAIT on
        # its port for a minute, which only SO_REUSEADDR lets a restarted server bind past; a
        # server still listening there is refused all the same.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise HarnessError(
                f"cannot listen on {host}:{port}: {error.strerror or error} (another server? "
                "choose --grpc_port, or --listen an address of this host)"
            ) from None


@dataclass
class Served:
    """A prepared model: its runners (active once entered) and what it answers."""

    benchmark: Benchmark
    prepared: PreparedRun
    runners: list[Runner]
    devices: list[int]  # each runner's device (Runner.device_index), before the benchmark wraps it
    postprocess: Postprocess
    batch_size: int
    queue_delay_us: int
    backend: str
    precision: str
    options: RunOptions

    def identity(
        self,
        sample: npt.NDArray[np.generic],
        raw: npt.NDArray[np.generic],
        answer: npt.NDArray[np.generic],
    ) -> ServedModel:
        provenance = self.prepared.provenance
        engines = provenance.get("engines") or provenance.get("engine")
        return ServedModel(
            benchmark=self.benchmark.name,
            model_name=model_name(self.benchmark),
            engine_key=engine_key(engines),
            model_sha256=self.prepared.model_sha256,
            backend=self.backend,
            precision=self.precision,
            max_batch_size=self.batch_size,
            runners=len(self.runners),
            sample_dtype=str(sample.dtype),
            sample_shape=tuple(sample.shape[1:]),
            output_dtype=str(raw.dtype),
            output_shape=tuple(raw.shape[1:]),
            answer_dtype=str(answer.dtype),
            answer_shape=tuple(answer.shape[1:]),
            config_ver=self.options.config_ver,
            stand_in=self.prepared.stand_in,
            varying_shapes=varying_shapes(self.prepared.store),
        )


def model_name(benchmark: Benchmark) -> str:
    return benchmark.name


def engine_key(engines: str | None) -> str:
    """Each engine as its cache directory (named by the engine's spec) and file: the same engine
    built on two hosts has the same key."""
    if not engines:
        return "none"
    return " ".join(f"{Path(path).parent.name}/{Path(path).name}" for path in engines.split())


def prepare_served(benchmark: Benchmark, options: RunOptions) -> Served:
    """The benchmark prepared as the direct harness would for these flags, and its runners."""
    layered, prepared = prepare_run(benchmark, options, log_dir=False)
    settings, backend = layered.settings, layered.backend
    # A runner the benchmark wraps (3D-UNet's sliding window over a whole volume) is served
    # wrapped: a request carries the benchmark's samples, as the direct harness's batches do.
    made = create_runners(backend, backend_options_for(prepared, settings))
    runners = wrapped_runners(made, prepared)
    delay = settings.server_batch_timeout_us if options.scenario is Scenario.SERVER else 0
    return Served(
        benchmark=benchmark,
        prepared=prepared,
        runners=runners,
        devices=[runner.device_index for runner in made],
        postprocess=prepared.postprocess or benchmark.postprocess,
        batch_size=settings.batch_size or 1,
        queue_delay_us=delay or 0,
        backend=backend,
        precision=settings.precision or "fp32",
        options=options,
    )


InferFunc = Callable[[list[Any]], list[dict[str, npt.NDArray[Any]]]]


def infer_function(
    runner: Runner,
    postprocess: Postprocess,
    identity: bytes,
    sample_shape: tuple[int, ...],
    varying: bool,
    held: SampleHolder,
) -> InferFunc:
    """One runner's answers. Triton's batch of requests, each carrying samples (SAMPLES) or naming
    samples the server holds (SAMPLE_IDS), stacked into one runner call per kind (one call per
    request where their samples differ in shape). A request that asks only for the identity runs
    nothing; a HOLD request sets the samples held (held_samples.py)."""

    def infer(requests: list[Any]) -> list[dict[str, npt.NDArray[Any]]]:
        wanted = [set(request.requested_output_names or (OUTPUT, ANSWER)) for request in requests]
        replies: list[dict[str, npt.NDArray[Any]]] = [{} for _ in requests]
        carried: list[int] = []  # requests carrying their samples
        named: list[int] = []  # requests naming samples the server holds
        for i, request in enumerate(requests):
            if HOLD in request:
                replies[i][DIGEST] = held.hold(request[HOLD].reshape(-1).tolist())[None, :]
            elif wanted[i] & {OUTPUT, ANSWER}:
                (named if SAMPLE_IDS in request else carried).append(i)
        parts = [from_wire(requests[i][SAMPLES], sample_shape, varying) for i in carried]
        raws = run_parts(runner, parts)
        if named:
            ids = [requests[i][SAMPLE_IDS].reshape(-1) for i in named]
            if varying:  # samples of different shapes cannot share a runner call
                raws += [held.infer(runner, part) for part in ids]
            else:
                raws += split_rows(held.infer(runner, np.concatenate(ids)), ids)
        for i, raw in zip(carried + named, raws, strict=True):
            replies[i][OUTPUT] = to_wire(raw)
            if ANSWER in wanted[i]:
                replies[i][ANSWER] = to_wire(postprocess(raw))
        for i, request in enumerate(requests):
            if IDENTITY in wanted[i]:
                rows = request[SAMPLES] if SAMPLES in request else request[SAMPLE_IDS]
                replies[i][IDENTITY] = np.full((len(rows), 1), identity, dtype=object)
        return replies

    return infer


def split_rows(
    raw: npt.NDArray[np.generic], parts: Sequence[npt.NDArray[Any]]
) -> list[npt.NDArray[np.generic]]:
    """One runner call's output rows, cut back into its parts' (in order)."""
    ends = np.cumsum([len(part) for part in parts])
    return [raw[end - len(part) : end] for part, end in zip(parts, ends, strict=True)]


def run_parts(runner: Runner, parts: list[npt.NDArray[Any]]) -> list[npt.NDArray[np.generic]]:
    """Each part's raw output rows: one runner call for all when their samples share a shape."""
    if not parts:
        return []
    if len({part.shape[1:] for part in parts}) > 1:
        return [runner.infer(part) for part in parts]
    return split_rows(runner.infer(parts[0] if len(parts) == 1 else np.concatenate(parts)), parts)


@contextlib.contextmanager
def stop_on_signal(serving: threading.Event) -> Iterator[threading.Event]:
    """An event set by SIGTERM or SIGINT once `serving` is set; before that (the model still
    loading) the signal interrupts the start (KeyboardInterrupt), and leaving the Triton context
    stops the server process it began. The previous handlers are restored after."""
    stop = threading.Event()

    def handle(_signum: int, _frame: FrameType | None) -> None:
        if not serving.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {number: signal.signal(number, handle) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def find_triton_libraries() -> None:
    """PyTriton looks for the server's libraries (nvidia_pytriton.libs, beside its package) only
    when its package lies under one of the interpreter's site-packages, and otherwise takes itself
    for a source checkout. Ours lies in a PEX's or PYTHONPATH's directory: tell it that it was
    installed from its wheel whenever the wheel's library directory is there."""
    from pytriton.utils import distribution

    root = distribution.get_root_module_path()
    if (root.parent / "nvidia_pytriton.libs").is_dir():
        distribution.is_editable_install = lambda: False


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of the served model, as both runtimes declare it to Triton."""

    name: str
    dtype: np.dtype[Any]  # object: bytes (Triton's BYTES)
    shape: tuple[int, ...]  # per request row (Triton adds the batch dimension)
    optional: bool = False


@dataclass(frozen=True)
class Described:
    """What a warm-up batch through one runner says about the served model."""

    warm: npt.NDArray[Any]
    raw: npt.NDArray[Any]
    answer: npt.NDArray[Any]
    identity: ServedModel

    def inputs(self) -> list[TensorSpec]:
        # A request carries one of the three (--triton_samples wire, staged; a HOLD).
        return [
            TensorSpec(SAMPLES, self.warm.dtype, self._shape(self.warm), optional=True),
            TensorSpec(SAMPLE_IDS, np.dtype(np.int64), (1,), optional=True),
            TensorSpec(HOLD, np.dtype(np.int64), (VARYING,), optional=True),
        ]

    def outputs(self) -> list[TensorSpec]:
        return [
            TensorSpec(OUTPUT, self.raw.dtype, self._shape(self.raw)),
            TensorSpec(ANSWER, self.answer.dtype, self._shape(self.answer)),
            TensorSpec(IDENTITY, np.dtype(object), (1,)),
            TensorSpec(DIGEST, np.dtype(np.uint8), (DIGEST_BYTES,)),
        ]

    def _shape(self, rows: npt.NDArray[Any]) -> tuple[int, ...]:
        return wire_shape(tuple(rows.shape[1:]), self.identity.varying_shapes)


def describe(served: Served, runner: Runner, warm: npt.NDArray[Any]) -> Described:
    """The warm-up batch through an active runner: the served model's identity and tensors."""
    raw = runner.infer(warm)
    answer = served.postprocess(raw)
    return Described(warm, raw, answer, served.identity(warm, raw, answer))


def ready_line(identity: ServedModel, listen: str, port: int, log_file: Path) -> str:
    return (
        f"{PROG}: {READY_LINE}: {identity.describe()} on {listen}:{port} (gRPC); "
        f"Triton's log {log_file}; SIGTERM or Ctrl-C stops it"
    )


def serve_pytriton(
    served: Served, listen: str, port: int, control_key: str, log_file: Path
) -> None:
    """The runners in this process, behind PyTriton's proxy in Triton's Python backend."""
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

    find_triton_libraries()
    # PyTriton's own client warns on every call that gRPC has no per-call network timeout.
    warnings.filterwarnings("ignore", message=".*doesn't support timeout")

    warm = served.prepared.store.warmup_batch(served.batch_size)
    with contextlib.ExitStack() as active:
        for runner in unique_runners(served.runners):
            active.enter_context(runner)
            runner.infer(warm)  # allocation and kernel choice before the first request
        described = describe(served, served.runners[0], warm)
        identity = described.identity
        held = HeldSamples(served.prepared.store, unique_runners(served.runners))

        def tensor(spec: TensorSpec) -> Any:
            dtype = bytes if spec.dtype == np.dtype(object) else spec.dtype
            return Tensor(name=spec.name, dtype=dtype, shape=spec.shape, optional=spec.optional)

        log_file.parent.mkdir(parents=True, exist_ok=True)
        config = TritonConfig(
            grpc_address=listen,
            grpc_port=port,
            allow_http=False,
            allow_metrics=False,
            log_file=log_file,
            exit_timeout_secs=EXIT_TIMEOUT_S,
            # The client's keepalive pings (served_model.KEEPALIVE_MS), with calls in flight or not.
            grpc_keepalive_permit_without_calls=True,
            grpc_http2_min_recv_ping_interval_without_data=KEEPALIVE_MS // 2,
        )
        security = TritonSecurityConfig(
            access_token=control_key, restricted_endpoints=list(CONTROL_APIS)
        )
        # PyTriton's default workspace, "$HOME/.cache/pytriton", keeps a literal "$HOME" where HOME
        # is unset (Pants' test sandboxes), and the Python backend's stub then never starts.
        workspace = Path(active.enter_context(tempfile.TemporaryDirectory(prefix="mlperf-triton-")))
        triton = Triton(config=config, security_config=security, workspace=workspace / "pytriton")
        serving = threading.Event()
        with stop_on_signal(serving) as stop, triton:
            triton.bind(
                model_name=identity.model_name,
                model_version=MODEL_VERSION,
                infer_func=[
                    infer_function(
                        runner,
                        served.postprocess,
                        identity.to_json().encode(),
                        identity.sample_shape,
                        identity.varying_shapes,
                        held,
                    )
                    for runner in served.runners
                ],
                inputs=[tensor(spec) for spec in described.inputs()],
                outputs=[tensor(spec) for spec in described.outputs()],
                config=ModelConfig(
                    # Clients speak one protocol, streams (wire.py), which the python_backend
                    # runtime's model needs; a decoupled PyTriton model answers over them.
                    decoupled=True,
                    max_batch_size=served.batch_size,
                    batcher=DynamicBatcher(
                        max_queue_delay_microseconds=served.queue_delay_us,
                        preferred_batch_size=[served.batch_size],
                    ),
                ),
                strict=False,
            )
            triton.run()
            serving.set()
            print(ready_line(identity, listen, port, log_file), flush=True)
            while not stop.wait(0.5):
                if not triton.is_alive():
                    raise HarnessError(f"the Triton server stopped by itself: see {log_file}")
            print_stopping()
    print(STOPPED_LINE, file=sys.stderr, flush=True)


def print_stopping() -> None:
    print(f"{PROG}: stopping: finishing the requests the server holds", file=sys.stderr, flush=True)


def parse_served(argv: Sequence[str]) -> tuple[Benchmark, argparse.Namespace]:
    """The served benchmark and the serve flags, parsed with the benchmark's own default round
    (RetinaNet's v6.0, not v6.1), as its runs are."""
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument("--benchmark_module", required=True)
    benchmark = load_benchmark_module(first.parse_known_args(list(argv))[0].benchmark_module)
    return benchmark, serve_parser(benchmark.default_round).parse_args(list(argv))


def serve_cli(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)

    def run() -> int:
        benchmark, args = parse_served(args_list)
        listen = check_host(args.listen, "--listen")
        options = options_from_args(args, args_list)
        ensure_interpreter(args_list)
        check_port_free(listen, args.grpc_port)
        served = prepare_served(benchmark, options)
        log_file = (
            args.triton_log
            or options.scratch_path / "triton" / f"{benchmark.name}-{args.grpc_port}.log"
        )
        control_key = args.control_key or secrets.token_urlsafe(32)
        if args.triton_runtime == PYTRITON:
            serve_pytriton(served, listen, args.grpc_port, control_key, log_file.absolute())
        else:
            from mlperf_harness.triton.python_backend_server import serve_python_backend

            serve_python_backend(
                served, args_list, listen, args.grpc_port, control_key, log_file.absolute()
            )
        return 0

    return run_entry_point(PROG, run)


def main() -> None:
    sys.exit(serve_cli())


if __name__ == "__main__":
    main()
