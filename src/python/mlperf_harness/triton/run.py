"""`--harness triton`: one LoadGen run whose model runs on Triton servers.

The servers come from --triton_servers, or one is started here (local_server.py). This process
prepares the samples as the direct harness does (for the "null" backend: the servers hold the
engines), checks every server before LoadGen starts (preflight.py), and runs the direct harness's
run with the Triton SUT (client_sut.py) in place of its runners.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.backends.base import Runner
from mlperf_harness.benchmarks.spec import Benchmark
from mlperf_harness.cli.log_dirs import remove_if_empty
from mlperf_harness.cli.options import RunOptions, TritonOptions
from mlperf_harness.cli.run_harness import RunPlan, RunRecord, plan_run, run_harness
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.batching import BatchSource
from mlperf_harness.loadgen.interruption import INTERRUPTED_FILE
from mlperf_harness.triton.addresses import ServerAddress
from mlperf_harness.triton.client_sut import STAGED, TritonSUT
from mlperf_harness.triton.local_server import local_server
from mlperf_harness.triton.preflight import (
    Expected,
    check_reachable,
    check_servers,
    check_staged_samples,
)
from mlperf_harness.triton.probe_runner import ServerProbe
from mlperf_harness.triton.served_model import ANSWER, OUTPUT, ServedModel, varying_shapes

EXIT_ALL_LOST = 2  # as a HarnessError's exit


@dataclass
class TritonModel:
    """The run's servers and what they serve (run_harness's RemoteModel)."""

    servers: tuple[ServerAddress, ...]
    served: ServedModel
    options: TritonOptions
    benchmark: Benchmark

    @property
    def backend(self) -> str:
        return self.served.backend

    def make_sut(self, plan: RunPlan, batches: BatchSource) -> TritonSUT:
        prepared = plan.prepared
        return TritonSUT(
            self.servers,
            self.served,
            prepared.store,
            batches,
            prepared.postprocess or self.benchmark.postprocess,
            sized_postprocess=self.benchmark.served_sized_postprocess(prepared, self.backend),
            response=self.options.response,
            samples=self.options.samples,
            response_bytes=prepared.response_bytes,
            inflight=self.options.inflight,
            timeout_s=self.options.timeout_s,
            all_lost_grace_s=self.options.all_lost_grace_s,
            on_all_lost=lambda message: end_run(plan.log_dir, self.benchmark.name, message),
        )

    def probe_runners(self, plan: RunPlan) -> list[Runner]:
        return [
            ServerProbe(address, self.served, self.options.timeout_s) for address in self.servers
        ]


def end_run(log_dir: Path, prog: str, message: str) -> None:
    """LoadGen cannot be stopped mid-test: mark the logs partial, say why in one line, and leave
    (a local server dies with this process)."""
    with contextlib.suppress(OSError):
        (log_dir / INTERRUPTED_FILE).write_text(f"{message}: these logs are partial\n")
    print(f"{prog}: error: {message}; partial logs in {log_dir}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(EXIT_ALL_LOST)


def checked_servers(
    benchmark: Benchmark, options: RunOptions, plan: RunPlan, servers: tuple[ServerAddress, ...]
) -> ServedModel:
    """What the servers serve, once each is found fit for this run (preflight.py)."""
    prepared = plan.prepared
    if prepared.sized_postprocess is not None and options.triton.response == ANSWER:
        raise HarnessError(
            f"--triton_response {ANSWER}: {benchmark.name}'s responses differ in length from "
            f"sample to sample, so its servers send the raw output (--triton_response {OUTPUT}, "
            "the default) and this side makes each response"
        )
    expected = Expected(
        benchmark=benchmark.name,
        model_sha256=prepared.model_sha256,
        config_ver=options.config_ver,
        precision=options.overrides.precision,
        sample=prepared.store.warmup_batch(1),
        varying_shapes=varying_shapes(prepared.store),
    )
    served = check_servers(servers, expected)
    if options.triton.samples == STAGED:
        check_staged_samples(servers, served, prepared.store)
    batch_size = plan.settings.settings.batch_size or 1
    if batch_size > served.max_batch_size:
        raise HarnessError(
            f"this run's batch size {batch_size} is more than the servers' largest batch "
            f"{served.max_batch_size}: give --batch_size {served.max_batch_size}"
        )
    return served


def run_triton(benchmark: Benchmark, options: RunOptions) -> RunRecord:
    with contextlib.ExitStack() as stack:
        servers = options.triton.servers
        if not servers:
            module = type(benchmark).__module__
            servers = (stack.enter_context(local_server(module, options.argv, benchmark.name)),)
        check_reachable(servers, benchmark.name)
        plan = plan_run(benchmark, options, prepare_backend="null")
        try:
            served = checked_servers(benchmark, options, plan, servers)
        except BaseException:
            if plan.created_log_dir_below is not None:
                remove_if_empty(plan.log_dir, plan.created_log_dir_below)
            raise
        return run_harness(benchmark, plan, TritonModel(servers, served, options.triton, benchmark))
    raise AssertionError("unreachable")  # ExitStack swallows nothing; mypy cannot tell
