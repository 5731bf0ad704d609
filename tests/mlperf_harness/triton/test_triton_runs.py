"""The Triton harness end to end, on the CPU: two real Triton servers (one of each runtime,
python_backend and pytriton; ONNX Runtime on the shared small ResNet-50 stand-in) and LoadGen runs
across both: a VALID Offline run, accuracy equal to the direct harness's, one server that
stops answering (lost at the run's deadline), one server killed mid-run, one killed and restarted, both killed; a VALID Server run across two servers of the null
model (harness_overhead). Slow (each server takes
seconds to start): CI runs these (MLPERF_SLOW_TESTS=1).

The tests share the servers and run in file order: the kill tests come last.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from one_line_errors import one_error_line
from shared_stand_in import SharedStandIn, shared_stand_in
from tcp_relay import TcpRelay
from tritonclient.utils import InferenceServerException

from mlperf_harness.benchmarks.harness_overhead.benchmark import BENCHMARK as OVERHEAD
from mlperf_harness.benchmarks.resnet50 import main as resnet50_main
from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.config.measured_rates import MEASURED_SOURCES
from mlperf_harness.triton import client_sut, wire
from mlperf_harness.triton.local_server import free_port
from mlperf_harness.triton.server_process import (
    STOPPED_LINE,
    ServerProcess,
    serve_command,
    server_environment,
    start_server,
)

pytestmark = pytest.mark.slow

# Each server keeps to one thread, as if on a host of its own; batches of 2: many per run.
SERVER_FLAGS = ["--intra_op_threads", "1", "--batch_size", "2"]
SHORT = ["--min_duration_ms", "300", "--min_query_count", "8", "--batch_size", "2"]
START_TIMEOUT_S = 300
# Every test server ends by itself after this long (coreutils' timeout sends it SIGTERM): a test
# process killed from outside (a CI timeout) runs no teardown, and its servers must not live on.
SERVER_LIFETIME_S = 900


def stop(server: ServerProcess) -> None:
    """SIGTERM, as a user stops a server: it answers what it holds and exits 0 (a server a test
    killed is left as it is)."""
    if server.alive():
        assert server.stop() == 0, server.log.read_text()
        assert STOPPED_LINE in server.log.read_text()


def serve_argv(stand_in: SharedStandIn, scratch: Path, port: int, *extra: str) -> list[str]:
    flags = [*stand_in.run_flags(), "--scratch_path", str(scratch), *SERVER_FLAGS, *extra]
    return serve_command("mlperf_harness.benchmarks.resnet50.benchmark", flags, port)


def start_process(argv: list[str], log: Path, port: int) -> ServerProcess:
    return start_server(argv, log, port, timeout_s=START_TIMEOUT_S, lifetime_s=SERVER_LIFETIME_S)


def overhead_argv(scratch: Path, port: int) -> list[str]:
    return serve_command(type(OVERHEAD).__module__, ["--scratch_path", str(scratch)], port)


def start_resnet50(
    stand_in: SharedStandIn, scratch: Path, work: Path, *extra: str
) -> ServerProcess:
    port = free_port()
    argv = serve_argv(stand_in, scratch, port, *extra)
    return start_process(argv, work / f"server-{port}.out", port)


@pytest.fixture(scope="module")
def stand_in() -> SharedStandIn:
    return shared_stand_in()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scratch")


@pytest.fixture(scope="module")
def servers(
    stand_in: SharedStandIn, scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[ServerProcess]]:
    work = tmp_path_factory.mktemp("servers")
    # The first builds the engine and preprocesses (the second would wait for its lock anyway).
    # One server of each runtime: every run across both checks that they answer alike.
    first = start_resnet50(stand_in, scratch, work)
    started = [first, start_resnet50(stand_in, scratch, work, "--triton_runtime", "pytriton")]
    yield started
    for server in started:
        stop(server)


@pytest.fixture(scope="module")
def overhead_servers(
    scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[ServerProcess]]:
    """Two servers of the null model (benchmarks/harness_overhead): what the client does alone."""
    work = tmp_path_factory.mktemp("overhead")
    started: list[ServerProcess] = []
    try:
        for _ in range(2):
            port = free_port()
            started.append(start_process(overhead_argv(scratch, port), work / f"{port}.out", port))
        yield started
    finally:
        for server in started:
            stop(server)


def run(stand_in: SharedStandIn, scratch: Path, logs: Path, *extra: str) -> int:
    return run_benchmark_cli(
        BENCHMARK,
        [*stand_in.run_flags(), "--scratch_path", str(scratch), "--log_dir", str(logs), *extra],
    )


def result(logs: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((logs / "result.json").read_text())
    return record


def accuracy_entries(logs: Path) -> dict[int, str]:
    """qsl_idx -> logged response data; each sample exactly once."""
    entries = json.loads((logs / "mlperf_log_accuracy.json").read_text())
    by_index = {entry["qsl_idx"]: entry["data"] for entry in entries}
    assert len(by_index) == len(entries), "a sample was completed twice"
    return by_index


def triton_flags(servers: list[ServerProcess]) -> list[str]:
    return ["--harness", "triton", "--triton_servers", ",".join(str(s.address) for s in servers)]


# The failover tests' AccuracyOnly runs: 12 batches of 2, long enough to lose a server mid-run.
FAILOVER_COUNT = 24
FAILOVER_RUN = ["--test_mode", "AccuracyOnly", "--count", str(FAILOVER_COUNT), "--batch_size", "2"]


@pytest.fixture(scope="module")
def direct_failover_run(
    stand_in: SharedStandIn, scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The direct harness's logs of FAILOVER_RUN, which each failover run must equal."""
    logs = tmp_path_factory.mktemp("direct-failover")
    assert run(stand_in, scratch, logs, *FAILOVER_RUN) == 0
    return logs


def after_batches(monkeypatch: pytest.MonkeyPatch, count: int, action: Callable[[], None]) -> None:
    """Do `action` once the run has completed `count` batches in LoadGen (mid-run)."""
    completed: list[int] = []
    real_complete = client_sut.complete  # type: ignore[attr-defined]

    def complete_then_act(*args: Any) -> None:
        real_complete(*args)
        completed.append(1)
        if len(completed) == count:
            action()

    monkeypatch.setattr(client_sut, "complete", complete_then_act)


def test_valid_offline_run_across_two_servers(
    servers: list[ServerProcess], stand_in: SharedStandIn, scratch: Path, tmp_path: Path
) -> None:
    # Offline's rate timed at start through both servers, whatever this machine's speed.
    extra = [*SHORT, *triton_flags(servers)]
    assert run(stand_in, scratch, tmp_path / "logs", *extra) == 0
    record = result(tmp_path / "logs")
    check_valid_across(record, "onnxruntime")
    # (or by a first attempt that ended early: a busy machine's timing at start was too low)
    assert record["settings"]["offline_expected_qps"]["from"] in MEASURED_SOURCES
    assert record["measured_at_start"]["timing"]["runners"] == 2  # one probe per server


def test_valid_server_run_across_two_servers(
    overhead_servers: list[ServerProcess], scratch: Path, tmp_path: Path
) -> None:
    # The null model: a Server run of the 459 queries that LoadGen's p99 early-stopping estimate
    # needs takes seconds at a rate that a loaded 2-core machine keeps (a CPU ResNet-50's would
    # take minutes); a generous latency bound for the same reason.
    user_conf = tmp_path / "my.conf"
    user_conf.write_text("harness_overhead.Server.target_latency = 1000\n")
    argv = [
        "--scenario", "Server", "--server_target_qps", "200", "--min_query_count", "460",
        "--min_duration_ms", "300", "--user_conf", str(user_conf), "--scratch_path", str(scratch),
        "--log_dir", str(tmp_path / "logs"), *triton_flags(overhead_servers),
    ]  # fmt: skip
    assert run_benchmark_cli(OVERHEAD, argv) == 0
    check_valid_across(result(tmp_path / "logs"), "null")


def check_valid_across(record: dict[str, Any], backend: str) -> None:
    assert record["result_valid"] is True, record["invalid_reasons"]
    assert record["harness"] == "triton" and record["backend"] == backend
    done = [server["completed_samples"] for server in record["triton"]["servers"]]
    assert len(done) == 2 and all(count > 0 for count in done), done  # both servers took work
    assert record["triton"]["lost_servers"] == 0


def test_accuracy_is_the_direct_harness_s(
    servers: list[ServerProcess], stand_in: SharedStandIn, scratch: Path, tmp_path: Path
) -> None:
    accuracy = ["--test_mode", "AccuracyOnly", "--count", "16", "--batch_size", "2"]
    assert run(stand_in, scratch, tmp_path / "direct", *accuracy) == 0
    # Samples on the wire with either response, and held by the servers (staged: requests carry
    # indices; the servers preprocessed the same images into the same scratch).
    for response, samples in (("output", "wire"), ("answer", "wire"), ("output", "staged")):
        logs = tmp_path / f"{response}-{samples}"
        flags = [*triton_flags(servers), "--triton_response", response, "--triton_samples", samples]
        assert run(stand_in, scratch, logs, *accuracy, *flags) == 0
        assert accuracy_entries(logs) == accuracy_entries(tmp_path / "direct")
        assert result(logs)["accuracy"] == result(tmp_path / "direct")["accuracy"]
        assert result(logs)["triton"]["samples"] == samples


def test_bad_servers_are_one_line(
    servers: list[ServerProcess],
    stand_in: SharedStandIn,
    scratch: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    nobody = f"127.0.0.1:{free_port()}"
    assert run(stand_in, scratch, tmp_path, "--harness", "triton", "--triton_servers", nobody) == 2
    line = one_error_line(capsys.readouterr().err, "resnet50")
    assert f"cannot reach Triton server {nobody}" in line and "Connection refused" in line
    # Another precision than the servers' (fp32).
    argv = [*triton_flags(servers[:1]), "--precision", "int8"]
    assert run(stand_in, scratch, tmp_path / "int8", *argv) == 2
    err = capsys.readouterr().err  # after the stand-in's notice
    line = one_error_line(err.splitlines()[-1] + "\n", "resnet50")
    assert line.endswith(f"Triton server {servers[0].address} serves precision fp32, not int8")


def test_control_apis_answer_only_with_the_key(servers: list[ServerProcess]) -> None:
    # Each runtime's server started with a random key nobody was told: its statistics and model
    # repository APIs refuse a call without it, while inference and health answer.
    for server in servers:
        client = wire.connect(server.address)
        try:
            assert client.is_model_ready(BENCHMARK.name)
            for call in (client.get_inference_statistics, client.get_model_repository_index):
                with pytest.raises(InferenceServerException, match="This protocol is restricted"):
                    call()
        finally:
            client.close()


def test_a_server_of_another_benchmark_is_one_line(
    overhead_servers: list[ServerProcess],
    stand_in: SharedStandIn,
    scratch: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    other = overhead_servers[0]
    flags = ["--harness", "triton", "--triton_servers", str(other.address)]
    assert run(stand_in, scratch, tmp_path / "logs", *flags) == 2
    line = one_error_line(capsys.readouterr().err, "resnet50")
    assert f"Triton server {other.address} has no model 'resnet50' ready" in line


def test_a_port_in_use_is_one_line(
    servers: list[ServerProcess], stand_in: SharedStandIn, scratch: Path
) -> None:
    done = subprocess.run(
        serve_argv(stand_in, scratch, servers[0].port),
        capture_output=True,
        text=True,
        env=server_environment(),
        timeout=120,
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("serve: error: cannot listen on 127.0.0.1:") and "in use" in last


def test_a_server_that_stops_answering_is_lost_at_its_deadline(
    servers: list[ServerProcess],
    stand_in: SharedStandIn,
    scratch: Path,
    direct_failover_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A host that stops answering without closing its connections (a hung machine, a partition):
    # a relay in front of the first server stops passing anything on. The client's keepalive pings
    # would notice within seconds; they are slowed here so that only the run's own deadline (a
    # stream has none) can. The deadline counts a server's silence with batches in flight, not a
    # batch's age: the healthy server, answering its queue however loaded this machine is, stays.
    monkeypatch.setattr(wire, "KEEPALIVE_MS", 600_000)
    with contextlib.closing(TcpRelay(servers[0].address.host, servers[0].port)) as relay:
        after_batches(monkeypatch, 3, relay.freeze)
        logs = tmp_path / "triton"
        relayed = f"127.0.0.1:{relay.port}"
        flags = ["--harness", "triton", "--triton_servers", f"{relayed},{servers[1].address}"]
        assert run(stand_in, scratch, logs, *FAILOVER_RUN, *flags, "--triton_timeout_s", "5") == 0
    assert accuracy_entries(logs) == accuracy_entries(direct_failover_run)  # each sample once
    record = result(logs)["triton"]
    losses = {s["address"]: s["lost"] for s in record["servers"]}
    assert losses[str(servers[1].address)] == []
    (loss,) = losses[relayed]
    assert re.fullmatch(
        r"DEADLINE_EXCEEDED: no answer for 5 s with \d+ batch\(es\) in flight", loss["reason"]
    ), loss
    assert loss["resent_samples"] > 0


def test_one_server_killed_mid_run_loses_nothing(
    servers: list[ServerProcess],
    stand_in: SharedStandIn,
    scratch: Path,
    direct_failover_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The second server dies (SIGKILL, all its processes) once the run has completed 3 batches.
    after_batches(monkeypatch, 3, servers[1].kill)
    logs = tmp_path / "triton"
    assert run(stand_in, scratch, logs, *FAILOVER_RUN, *triton_flags(servers)) == 0
    assert not servers[1].alive()
    assert accuracy_entries(logs) == accuracy_entries(direct_failover_run)  # each sample once
    record = result(logs)
    assert record["accuracy"] == result(direct_failover_run)["accuracy"]
    lost = {s["address"]: s["lost"] for s in record["triton"]["servers"]}
    assert lost[str(servers[0].address)] == [] and len(lost[str(servers[1].address)]) == 1
    assert record["triton"]["lost_servers"] == 1
    assert sum(s["completed_samples"] for s in record["triton"]["servers"]) == FAILOVER_COUNT


def test_a_server_that_comes_back_is_used_again(
    servers: list[ServerProcess],
    stand_in: SharedStandIn,
    scratch: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A new second server (the test above killed the first); during a Server run it is killed
    # and started again on its port: the prober finds it and the run sends it work again. The
    # samples are staged: the server that comes back must be made to hold them before it is used.
    servers[1] = start_resnet50(stand_in, scratch, tmp_path)
    port = servers[1].port

    def start_again() -> None:
        argv = serve_argv(stand_in, scratch, port)
        servers[1] = start_process(argv, tmp_path / "again.out", port)

    def kill_and_restart() -> None:
        servers[1].kill()
        restart = ThreadPoolExecutor(1)
        restart.submit(start_again)
        restart.shutdown(wait=False)

    after_batches(monkeypatch, 2, kill_and_restart)
    flags = [
        "--scenario", "Server", "--server_target_qps", "4", "--min_duration_ms", "40000",
        "--triton_samples", "staged",
    ]  # fmt: skip
    logs = tmp_path / "logs"
    assert run(stand_in, scratch, logs, *flags, *SHORT[2:], *triton_flags(servers)) == 0
    second = result(logs)["triton"]["servers"][1]
    assert len(second["lost"]) == 1 and len(second["returned_at_s"]) == 1, second
    assert second["returned_at_s"][0] > second["lost"][0]["at_s"]
    assert second["completed_samples"] > second["lost"][0]["completed_before"]  # used again


def test_every_server_killed_is_a_clear_error_within_seconds(
    servers: list[ServerProcess], stand_in: SharedStandIn, scratch: Path, tmp_path: Path
) -> None:
    # In a process of its own: the harness ends its process (LoadGen cannot be stopped).
    live = [s for s in servers if s.alive()]
    assert len(live) == 2
    argv = [
        sys.executable, "-m", resnet50_main.__name__,
        *stand_in.run_flags(), "--scratch_path", str(scratch), "--log_dir", str(tmp_path),
        "--scenario", "Server", "--server_target_qps", "4", "--min_duration_ms", "120000",
        "--batch_size", "2", *triton_flags(live),
    ]  # fmt: skip
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=server_environment())
    assert process.stderr is not None
    deadline = time.monotonic() + 120
    while not (tmp_path / "mlperf_log_detail.txt").exists():
        if process.poll() is not None:
            raise AssertionError(f"the run ended early: {process.communicate()[1]}")
        assert time.monotonic() < deadline
        time.sleep(0.2)
    for server in live:
        server.kill()
    killed_at = time.monotonic()
    _out, err = process.communicate(timeout=60)
    took = time.monotonic() - killed_at
    assert process.returncode == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("resnet50: error: every Triton server was lost"), err
    assert "partial logs in" in last
    assert took < 30, f"the run took {took:.1f} s to end"
    assert (tmp_path / "INTERRUPTED").is_file()


def test_a_system_config_s_native_loadgen_path_gives_way_to_triton(
    overhead_servers: list[ServerProcess], scratch: Path, tmp_path: Path
) -> None:
    # A system whose config runs LoadGen's C++ path (as ResNet-50's x4 and x8 H200 configs do):
    # the Triton harness completes through mlperf_loadgen, runs, and says so in result.json.
    from mlperf_harness.systems.custom import add_custom_system
    from mlperf_harness.systems.detect import detect_system

    config_dir = tmp_path / "systems"
    path = add_custom_system(detect_system(), "NativeBox", config_dir, [OVERHEAD.name])
    document = json.loads(path.read_text())
    document["settings"][OVERHEAD.name]["Offline"]["loadgen_path"] = "native"
    path.write_text(json.dumps(document))
    argv = [
        "--config_dir", str(config_dir), "--min_duration_ms", "300",
        "--scratch_path", str(scratch), "--log_dir", str(tmp_path / "logs"),
        *triton_flags(overhead_servers),
    ]  # fmt: skip
    assert run_benchmark_cli(OVERHEAD, argv) == 0
    record = result(tmp_path / "logs")
    assert record["settings"]["loadgen_path"] == {
        "value": "python",
        "from": "the Triton harness (mlperf_loadgen only)",
    }
    assert record["system_name"] == "NativeBox" and record["harness"] == "triton"
