"""The python_backend runtime's server process, without starting one (the Triton tests do): the
flags tritonserver gets, where this host reaches it, and the line a failed start gives."""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.triton.backend_model import ERROR_FILE
from mlperf_harness.triton.python_backend_server import (
    connect_address,
    failure,
    tritonserver_command,
)


def test_the_server_s_flags(tmp_path: Path) -> None:
    command = tritonserver_command(
        tmp_path / "models", tmp_path / "backends", "10.0.0.5", 8101, "k"
    )
    assert Path(command[0]).name == "tritonserver" and Path(command[0]).is_file()
    assert {"--grpc-address=10.0.0.5", "--grpc-port=8101", "--allow-http=false"} <= set(command)
    assert (
        "--grpc-restricted-protocol=shared-memory,model-repository,statistics,trace,logging:"
        "triton-access-token=k" in command
    )
    # Two servers on one host never share the stubs' shared memory.
    other = tritonserver_command(tmp_path / "models", tmp_path / "backends", "10.0.0.5", 8102, "k")
    prefixes = [
        next(flag for flag in flags if "shm-region-prefix-name" in flag)
        for flags in (command, other)
    ]
    assert prefixes[0] != prefixes[1]


def test_where_this_host_reaches_the_server() -> None:
    assert str(connect_address("0.0.0.0", 8001)) == "127.0.0.1:8001"
    assert str(connect_address("::", 8001)) == "127.0.0.1:8001"
    assert str(connect_address("fd00::3", 8001)) == "[fd00::3]:8001"
    assert str(connect_address("gpu-a", 8001)) == "gpu-a:8001"


def test_a_failed_start_names_the_instance_s_error(tmp_path: Path) -> None:
    log = tmp_path / "triton.log"
    assert str(failure(tmp_path, 2, log, "the server ended")) == f"the server ended: see {log}"
    (tmp_path / ERROR_FILE.format(index=1)).write_text("out of memory\n")
    assert str(failure(tmp_path, 2, log, "the server ended")) == (
        f"the model did not start (instance 1: out of memory); Triton's log: {log}"
    )
