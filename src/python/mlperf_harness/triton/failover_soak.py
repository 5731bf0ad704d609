"""The long failover run of the Triton harness (issue 16; CI runs the short one in
tests/mlperf_harness/triton): N local servers, long LoadGen runs across them while servers are
killed and started again at intervals, and at the end one table of what each run did and whether
every check held (soak_checks.py: every sample completed exactly once with the direct harness's
answer, losses and returns recorded).

    pants run benchmarks/resnet50:triton_failover_soak -- [--servers 3] [--seconds 120] \\
        [--kill_every_s 20] [--down_s 3] [--scenarios Offline,Server] -- [run flags]
    python -m mlperf_harness.triton.failover_soak [--benchmark resnet50] ... -- [run flags]

Run flags after the soak's own `--` go to every server and every run (--scratch_path,
--model_path, --data_dir, --backend, ...); without them the benchmark's defaults apply (the
stand-in). First a
direct AccuracyOnly run gives the reference answers (and prepares the model and data once), then
the servers start, then the runs: AccuracyOnly, then each scenario's performance run with every
response logged. Exit 0 when every check held, 1 otherwise; everything is kept in --work_dir.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic, write_text_atomic
from mlperf_harness.benchmarks.catalog import load_benchmark
from mlperf_harness.cli.parsing import (
    OneLineParser,
    non_negative_int,
    positive_float,
    positive_int,
    run_entry_point,
)
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.results import DETAIL_FILE
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.triton.chaos import KILL, TERM, Chaos
from mlperf_harness.triton.local_server import free_port
from mlperf_harness.triton.server_process import (
    ServerProcess,
    die_with_parent,
    serve_command,
    server_environment,
    start_server,
)
from mlperf_harness.triton.soak_checks import (
    LOG_EVERY_RESPONSE,
    RunCheck,
    check_run,
    direct_answers,
)

PROG = "failover_soak"
ACCURACY_RUN = "AccuracyOnly"
SERVER_START_TIMEOUT_S = 600.0
_POLL_S = 0.2


@dataclass(frozen=True)
class Soak:
    benchmark: str
    main_module: str  # `python -m` runs one benchmark run
    benchmark_module: str  # what a server serves
    servers: int
    seconds: float
    first_kill_s: float
    kill_every_s: float
    down_s: float
    scenarios: tuple[Scenario, ...]
    accuracy: bool
    batch_size: int
    server_threads: int  # 0: not given
    gpus: int  # 0: CUDA_VISIBLE_DEVICES not set
    offline_qps: float
    server_qps: float
    run_flags: tuple[str, ...]
    work: Path


def parser() -> argparse.ArgumentParser:
    made = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    add = made.add_argument
    add(
        "--benchmark",
        default="resnet50",
        help="the benchmark to serve and run (default %(default)s)",
    )
    add("--servers", type=positive_int, default=3, help="local servers (default %(default)s)")
    add(
        "--seconds",
        type=positive_float,
        default=120.0,
        help="each performance run's minimum duration (default %(default)s)",
    )
    add(
        "--first_kill_s",
        type=positive_float,
        default=2.0,
        help="the first outage this long after LoadGen starts (default %(default)s)",
    )
    add(
        "--kill_every_s",
        type=positive_float,
        default=20.0,
        help="then one server ended this often, in turn (default %(default)s)",
    )
    add(
        "--down_s",
        type=float,
        default=3.0,
        help="how long an ended server stays down before it starts again (default %(default)s)",
    )
    add(
        "--scenarios",
        default="Offline,Server",
        help="performance runs, comma-separated (default %(default)s)",
    )
    add("--no_accuracy", action="store_true", help="skip the AccuracyOnly run across servers")
    add("--batch_size", type=positive_int, default=2, help="(default %(default)s)")
    add(
        "--server_threads",
        type=non_negative_int,
        default=1,
        help="--intra_op_threads of each server (default %(default)s; 0: the config's)",
    )
    add(
        "--gpus",
        type=non_negative_int,
        default=0,
        help="server i runs on GPU i mod this (CUDA_VISIBLE_DEVICES; default 0: not set)",
    )
    add(
        "--offline_expected_qps",
        type=positive_float,
        default=8.0,
        help="Offline's expected rate: the query holds 1.1 x this x --seconds samples "
        "(default %(default)s, the CPU stand-in over 3 one-thread servers)",
    )
    add(
        "--server_target_qps",
        type=positive_float,
        default=4.0,
        help="Server's target rate (default %(default)s)",
    )
    add("--work_dir", type=Path, help="where every log goes (default: a new temporary directory)")
    add("run_flags", nargs="*", help="after `--`: flags for every server and run")
    return made


def soak_from_args(args: argparse.Namespace) -> Soak:
    benchmark = load_benchmark(args.benchmark)
    module = type(benchmark).__module__
    package = module.rpartition(".")[0]
    if args.servers < 2:
        raise HarnessError("--servers must be 2 or more: a run needs one server up at every outage")
    try:
        scenarios = tuple(Scenario(name.strip()) for name in args.scenarios.split(",") if name)
    except ValueError as error:
        raise HarnessError(f"--scenarios: {error} (Offline, Server)") from None
    if any(s not in (Scenario.OFFLINE, Scenario.SERVER) for s in scenarios):
        raise HarnessError("--scenarios: Offline and Server only (one query at a time is no soak)")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="mlperf-failover-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    return Soak(
        benchmark=benchmark.name,
        main_module=f"{package}.main",
        benchmark_module=module,
        servers=args.servers,
        seconds=args.seconds,
        first_kill_s=args.first_kill_s,
        kill_every_s=args.kill_every_s,
        down_s=max(0.0, args.down_s),
        scenarios=scenarios,
        accuracy=not args.no_accuracy,
        batch_size=args.batch_size,
        server_threads=args.server_threads,
        gpus=args.gpus,
        offline_qps=args.offline_expected_qps,
        server_qps=args.server_target_qps,
        run_flags=tuple(args.run_flags),
        work=work.absolute(),
    )


# Runs -------------------------------------------------------------------------------------------
def run_command(soak: Soak, log_dir: Path, *flags: str) -> list[str]:
    return [
        sys.executable, "-m", soak.main_module, *soak.run_flags, "--batch_size",
        str(soak.batch_size), "--log_dir", str(log_dir), *flags,
    ]  # fmt: skip


def start_run(command: Sequence[str], output: Path) -> subprocess.Popen[bytes]:
    with output.open("wb") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=server_environment(),
            preexec_fn=die_with_parent,
        )


def direct_reference(soak: Soak) -> tuple[dict[int, str], dict[str, Any]]:
    """The direct harness's AccuracyOnly answers and accuracy record (and the model and data
    prepared once, before the servers and runs share them)."""
    logs = soak.work / "direct-AccuracyOnly"
    say(f"direct harness, AccuracyOnly (the reference answers): {logs}")
    command = run_command(soak, logs, "--scenario", "Offline", "--test_mode", "AccuracyOnly")
    output = soak.work / "direct-AccuracyOnly.out"
    if start_run(command, output).wait() != 0:
        raise HarnessError(f"the direct AccuracyOnly run failed: {last_line(output)} ({output})")
    record = json.loads((logs / "result.json").read_text())
    return direct_answers(logs), record.get("accuracy") or {}


def last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no output"


# Servers ----------------------------------------------------------------------------------------
class Servers:
    """The soak's servers, each started again on its own port after an outage. Every server is
    started from one thread that lives as long as the soak: a server ends with the thread that
    started it (server_process.start_server), and the outages' thread ends with each run."""

    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self.started: list[ServerProcess] = []
        self._starts = 0
        self._gpu: dict[int, int] = {}  # port -> its GPU
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="server-starter")

    def start(self, port: int) -> ServerProcess:
        return self._starter.submit(self._start, port).result()

    def close(self) -> None:
        for server in self.started:
            server.stop()
        self._starter.shutdown()

    def _start(self, port: int) -> ServerProcess:
        soak = self.soak
        flags = [*soak.run_flags, "--batch_size", str(soak.batch_size)]
        if soak.server_threads:
            flags += ["--intra_op_threads", str(soak.server_threads)]
        self._starts += 1
        log = soak.work / "servers" / f"{port}-{self._starts}.log"
        command = serve_command(soak.benchmark_module, flags, port)
        env = {}
        if soak.gpus:  # a server started again keeps its port's GPU
            env["CUDA_VISIBLE_DEVICES"] = str(
                self._gpu.setdefault(port, len(self._gpu) % soak.gpus)
            )
        return start_server(command, log, port, timeout_s=SERVER_START_TIMEOUT_S, env=env)

    def restart(self, server: ServerProcess) -> ServerProcess:
        return self.start(server.port)

    def addresses(self) -> str:
        return ",".join(str(server.address) for server in self.started)

    def ensure_up(self) -> None:
        for index, server in enumerate(self.started):
            if not server.alive():
                self.started[index] = self.restart(server)


@contextmanager
def running_servers(soak: Soak) -> Iterator[Servers]:
    servers = Servers(soak)
    try:
        for _ in range(soak.servers):
            server = servers.start(free_port())
            servers.started.append(server)
            say(f"server {server.address} ready (log {server.log})")
        yield servers
    finally:
        servers.close()


def soak_run(
    soak: Soak,
    servers: Servers,
    name: str,
    flags: Sequence[str],
    direct: dict[int, str],
    direct_accuracy: dict[str, Any] | None,
) -> RunCheck:
    """One run across the servers with outages from LoadGen's start to the run's end."""
    logs = soak.work / name
    triton = ["--harness", "triton", "--triton_servers", servers.addresses()]
    output = soak.work / f"{name}.out"
    say(f"{name}: across {servers.addresses()} ({logs})")
    began = time.monotonic()
    process = start_run(run_command(soak, logs, *flags, *triton), output)
    while not (logs / DETAIL_FILE).exists() and process.poll() is None:
        time.sleep(_POLL_S)  # preparing: outages start with LoadGen
    chaos = Chaos(
        servers.started,
        servers.restart,
        first_s=soak.first_kill_s,
        every_s=soak.kill_every_s,
        down_s=soak.down_s,
        label=name,
    ).start()
    try:
        returncode = process.wait()
        ended_at = chaos.now()
    finally:
        chaos.stop()
    seconds = time.monotonic() - began
    if returncode != 0:
        say(f"{name}: the run failed (exit {returncode}): {last_line(output)}")
    return check_run(
        name, logs, returncode, seconds, chaos.outages, direct, direct_accuracy, ended_at
    )


def performance_flags(soak: Soak, scenario: Scenario, user_conf: Path) -> list[str]:
    rate = (
        ["--offline_expected_qps", f"{soak.offline_qps:g}"]
        if scenario is Scenario.OFFLINE
        else ["--server_target_qps", f"{soak.server_qps:g}"]
    )
    return [
        "--scenario", scenario.value, "--min_duration_ms", str(int(soak.seconds * 1000)),
        "--min_query_count", "1", "--user_conf", str(user_conf), *rate,
    ]  # fmt: skip


def run_soak(soak: Soak) -> list[RunCheck]:
    direct, accuracy = direct_reference(soak)
    user_conf = soak.work / "log_every_response.conf"
    write_text_atomic(user_conf, LOG_EVERY_RESPONSE)
    checks = []
    with running_servers(soak) as servers:
        runs: list[tuple[str, list[str], dict[str, Any] | None]] = []
        if soak.accuracy:
            flags = ["--scenario", "Offline", "--test_mode", "AccuracyOnly"]
            runs.append((ACCURACY_RUN, flags, accuracy))
        for scenario in soak.scenarios:
            runs.append((scenario.value, performance_flags(soak, scenario, user_conf), None))
        for name, flags, expected_accuracy in runs:
            servers.ensure_up()
            check = soak_run(soak, servers, name, flags, direct, expected_accuracy)
            checks.append(check)
            say(f"{name}: {'every check held' if check.passed else '; '.join(check.problems)}")
    return checks


# The table --------------------------------------------------------------------------------------
def table(checks: Sequence[RunCheck]) -> str:
    header = (
        f"{'run':<13}{'wall s':>8}{'samples':>9}{'samples/s':>11}{'outages':>9}{'KILL/TERM':>11}"
        f"{'losses':>8}{'returns':>9}{'re-sent':>9}  {'checks'}"
    )
    lines = [header]
    for check in checks:
        record = check.record
        rate = record.get("samples_per_second") or record.get("completed_samples_per_second")
        shown = "-" if rate is None else f"{rate:.2f}"  # an accuracy run has no rate
        kills = sum(1 for o in check.outages if o.how == KILL)
        terms = sum(1 for o in check.outages if o.how == TERM)
        verdict = "each sample once, = direct" if check.passed else "; ".join(check.problems)
        lines.append(
            f"{check.name:<13}{check.seconds:>8.0f}{check.samples:>9}{shown:>11}"
            f"{len(check.outages):>9}{f'{kills}/{terms}':>11}{check.losses():>8}"
            f"{check.returns():>9}{check.triton.get('resent_samples', 0):>9}  {verdict}"
        )
    return "\n".join(lines)


def summary(soak: Soak, checks: Sequence[RunCheck]) -> dict[str, Any]:
    return {
        "benchmark": soak.benchmark,
        "servers": soak.servers,
        "seconds": soak.seconds,
        "kill_every_s": soak.kill_every_s,
        "down_s": soak.down_s,
        "batch_size": soak.batch_size,
        "runs": [
            {
                "name": check.name,
                "wall_s": round(check.seconds, 1),
                "samples": check.samples,
                "logged": check.logged,
                "outages": [
                    {
                        "server": outage.server,
                        "how": outage.how,
                        "at_s": round(outage.at_s, 1),
                        "back_at_s": None
                        if outage.back_at_s is None
                        else round(outage.back_at_s, 1),
                    }
                    for outage in check.outages
                ],
                "losses": check.losses(),
                "returns": check.returns(),
                "resent_samples": check.triton.get("resent_samples", 0),
                "result_valid": check.record.get("result_valid"),
                "problems": check.problems,
            }
            for check in checks
        ],
    }


def say(text: str) -> None:
    print(f"soak: {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    def run() -> int:
        soak = soak_from_args(parser().parse_args(sys.argv[1:] if argv is None else argv))
        say(f"everything goes to {soak.work}")
        checks = run_soak(soak)
        write_json_atomic(soak.work / "soak.json", summary(soak, checks))
        print(table(checks))
        resent = sum(check.triton.get("resent_samples", 0) for check in checks)
        if resent == 0:
            print(f"{PROG}: no batch was ever re-sent: failover was not exercised", file=sys.stderr)
            return 1
        return 0 if all(check.passed for check in checks) else 1

    return run_entry_point(PROG, run)


if __name__ == "__main__":
    sys.exit(main())
