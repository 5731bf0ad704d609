"""How long one server of ours takes to answer a request, for a few batch sizes: calls one after
another on one gRPC stream (each sent once the last is answered), each carrying zero samples of the served shape (the cost of Triton and its
Python backend around the runner, where the runner is fast: the null model of harness_overhead).

    python -m mlperf_harness.triton.round_trip --server 127.0.0.1:18500 --model harness_overhead

Prints one line per batch size: the calls' p50, p90 and p99 and requests per second.
"""

from __future__ import annotations

import argparse
import queue
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from tritonclient.utils import InferenceServerException, triton_to_np_dtype

from mlperf_harness.cli.parsing import run_entry_point
from mlperf_harness.errors import HarnessError
from mlperf_harness.triton.addresses import parse_server
from mlperf_harness.triton.served_model import MODEL_VERSION, OUTPUT, SAMPLES, ServedModel
from mlperf_harness.triton.wire import (
    ServerStream,
    ask_identity,
    connect,
    describe_error,
    samples_input,
)

PROG = "round_trip"
TIMEOUT_S = 30.0


def _batches(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"batch sizes as 1,8,1024, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"batch sizes must be at least 1, got {text!r}")
    return sizes


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="host:port of a serve process")
    parser.add_argument("--model", required=True, help="the served benchmark, e.g. resnet50")
    parser.add_argument("--batch_sizes", type=_batches, default=[1, 8, 1024])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    return parser


def round_trip(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = parser().parse_args(argv)
        try:
            return measure(args)
        except InferenceServerException as error:
            raise HarnessError(f"{args.server}: {describe_error(error)}") from None

    return run_entry_point(PROG, body)


def measure(args: argparse.Namespace) -> int:
    address = parse_server(args.server)
    client = connect(address)
    # A probe sample of the served input's type and shape (a varying dimension as 1).
    metadata = client.get_model_metadata(args.model, str(MODEL_VERSION))
    client.close()
    declared = next(tensor for tensor in metadata.inputs if tensor.name == SAMPLES)
    shape = [max(1, int(size)) for size in declared.shape[1:]]
    probe = np.zeros((1, *shape), dtype=triton_to_np_dtype(declared.datatype))
    served = ServedModel.from_json(ask_identity(address, args.model, probe, TIMEOUT_S), args.server)
    print(f"{args.server}: {served.describe()}")
    print(f"{'batch':>6}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'requests/s':>12}")
    answers: queue.SimpleQueue[tuple[str | None, Any, Any]] = queue.SimpleQueue()
    stream = ServerStream(address, served.model_name, OUTPUT)
    stream.open(lambda request_id, result, error: answers.put((request_id, result, error)))
    try:
        for batch in args.batch_sizes:
            samples = np.zeros((batch, *served.sample_shape), dtype=served.sample_dtype)
            tensor = samples_input(samples)
            times = []
            for call in range(args.warmup + args.calls):
                start = time.perf_counter()
                stream.send(str(call), [tensor])
                _request_id, result, error = answers.get(timeout=TIMEOUT_S)
                if error is not None:
                    raise error
                result.as_numpy(OUTPUT)
                if call >= args.warmup:
                    times.append(time.perf_counter() - start)
            p50, p90, p99 = np.percentile(np.asarray(times) * 1e3, [50, 90, 99])
            print(f"{batch:>6}{p50:>9.3f}{p90:>9.3f}{p99:>9.3f}{len(times) / sum(times):>12,.0f}")
    finally:
        stream.shut()
    return 0


if __name__ == "__main__":
    raise SystemExit(round_trip())
