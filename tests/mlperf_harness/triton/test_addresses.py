"""--triton_servers and --listen as the command line gives them: every malformed list is one line."""

from __future__ import annotations

import pytest
from one_line_errors import one_error_line, raised_line

from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli
from mlperf_harness.triton.addresses import ServerAddress, check_host, parse_servers


def test_lists_of_hosts_and_ports() -> None:
    assert parse_servers("127.0.0.1:8001, gpu-host-2.lan:9001,[::1]:8001") == (
        ServerAddress("127.0.0.1", 8001),
        ServerAddress("gpu-host-2.lan", 9001),
        ServerAddress("::1", 8001),
    )
    assert str(ServerAddress("::1", 8001)) == "[::1]:8001"
    assert check_host("[::1]", "--listen") == "::1"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no empty entry"),
        ("127.0.0.1:8001,", "no empty entry"),
        ("127.0.0.1", "is not host:port"),
        (":8001", "is not host:port"),
        ("127.0.0.1:http", "port 'http'"),
        ("127.0.0.1:0", "port '0'"),
        ("127.0.0.1:70000", "port '70000'"),
        ("::1:8001", "IPv6 address in brackets"),
        ("bad_host!:8001", "not a host name"),
        ("a:1,a:1", "more than once"),
    ],
)
def test_malformed_lists_are_one_line(text: str, says: str) -> None:
    assert says in raised_line(parse_servers, text)


def test_the_run_refuses_a_malformed_list_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--harness", "triton", "--triton_servers", "localhost:80x"]
    assert run_benchmark_cli(BENCHMARK, argv) == 2
    line = one_error_line(capsys.readouterr().err, "resnet50")
    assert "--triton_servers" in line and "'80x'" in line


def test_servers_without_the_triton_harness_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_benchmark_cli(BENCHMARK, ["--triton_servers", "127.0.0.1:8001"]) == 2
    assert "needs --harness triton" in one_error_line(capsys.readouterr().err, "resnet50")
