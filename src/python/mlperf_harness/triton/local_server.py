"""`--harness triton` without --triton_servers: one server started here, on 127.0.0.1 and a free
port, with the run's own flags, so that one command still runs everything on one machine. It is
stopped when the run ends, and dies with this process if that ends first (Ctrl-C's os._exit)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence

# The server runs as `python -m mlperf_harness.triton.serve`, which no import names: imported
# here so that Pants puts it, and PyTriton with it, in every scenario PEX.
import mlperf_harness.triton.serve  # noqa: F401
from mlperf_harness.errors import HarnessError
from mlperf_harness.triton.addresses import DEFAULT_LISTEN, ServerAddress
from mlperf_harness.triton.server_process import (
    READY_LINE,
    die_with_parent,
    serve_command,
    server_environment,
)

STOP_TIMEOUT_S = 60.0


def free_port(host: str = DEFAULT_LISTEN) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def local_server(
    benchmark_module: str, run_argv: Sequence[str], prog: str, port: int | None = None
) -> Iterator[ServerAddress]:
    """A server of this benchmark with the run's flags, ready when this yields its address."""
    port = port or free_port()
    print(f"{prog}: starting a local Triton server on {DEFAULT_LISTEN}:{port}", file=sys.stderr)
    process = subprocess.Popen(
        serve_command(benchmark_module, run_argv, port),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        env=server_environment(),  # the server imports what this process imports
        preexec_fn=die_with_parent,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            sys.stderr.write(line)
            if READY_LINE in line:
                break
        else:
            status = process.wait()
            raise HarnessError(
                f"the local Triton server ended (exit {status}) before it was ready: see its "
                "error above"
            )
        # Echo the rest of its output as it comes, so that its pipe never fills.
        threading.Thread(target=_echo, args=(process.stdout,), daemon=True).start()
        yield ServerAddress(DEFAULT_LISTEN, port)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _echo(stream: object) -> None:
    for line in stream:  # type: ignore[attr-defined]
        sys.stderr.write(line)
