"""A Triton server of ours as a child process that others start, stop and kill: the failover soak
(failover_soak.py) and the tests. Its output goes to a file; it runs in a process group of its own,
so that a kill takes tritonserver and its Python backend stubs with it.

(`--harness triton` without servers starts its one server with local_server.py, which echoes the
server's output to the run's own.)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.errors import HarnessError
from mlperf_harness.triton import interpreter
from mlperf_harness.triton.addresses import DEFAULT_LISTEN, ServerAddress

SERVE_MODULE = "mlperf_harness.triton.serve"
READY_LINE = "triton server ready"  # serve.py prints it once the model answers
STOPPED_LINE = "serve: stopped"  # serve.py's last line after a clean stop
_PR_SET_PDEATHSIG = 1
_POLL_S = 0.2


def serve_command(
    benchmark_module: str, argv: Sequence[str], port: int, listen: str = DEFAULT_LISTEN
) -> list[str]:
    """`python -m mlperf_harness.triton.serve` for this benchmark, with a run's flags."""
    return [
        sys.executable, "-m", SERVE_MODULE, "--benchmark_module", benchmark_module, *argv,
        "--listen", listen, "--grpc_port", str(port),
    ]  # fmt: skip


def server_environment() -> dict[str, str]:
    """This environment, with an import path that gives the server what this process imports
    (inside a PEX too), and no mark of an earlier re-run (interpreter.py)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(interpreter.module_path(sys.path))
    env.pop(interpreter.RERUN_ENV, None)
    return env


def die_with_parent() -> None:
    """Runs in a child before exec: the kernel sends it SIGTERM when its parent ends."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class ServerProcess:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def address(self) -> ServerAddress:
        return ServerAddress(DEFAULT_LISTEN, self.port)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = 90.0) -> int:
        """SIGTERM, as a user stops a server: it answers the requests it holds, then exits (0);
        killed if it takes longer than `timeout_s`."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.wait()

    def kill(self) -> None:
        """SIGKILL to the server and everything it started (tritonserver, its stubs)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        # A stub left by the group's death would hold nothing; the group may still have members
        # that outlived its leader: end them too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


def start_server(
    command: Sequence[str],
    log: Path,
    port: int,
    *,
    timeout_s: float = 300.0,
    lifetime_s: float | None = None,
    env: Mapping[str, str] | None = None,
) -> ServerProcess:
    """Start `command` (serve_command's), its output in `log`, and wait until it is ready.
    `lifetime_s`: it ends by itself (SIGTERM) that long after, even if this process was killed
    without a chance to stop it. Without it, it ends with the *thread* that started it (the kernel's
    parent-death signal follows the thread, not the process): start it from a thread that lives as
    long as the server should. HarnessError with the server's last line if it ends or takes longer
    than `timeout_s` before it is ready. `env`: variables set for it beside server_environment's
    (CUDA_VISIBLE_DEVICES)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = list(command) if lifetime_s is None else ["timeout", f"{lifetime_s:g}", *command]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**server_environment(), **(env or {})},
            start_new_session=True,  # its own process group: killed whole
            preexec_fn=None if lifetime_s is not None else die_with_parent,
        )
    server = ServerProcess(port, process, log)
    deadline = time.monotonic() + timeout_s
    while READY_LINE not in log.read_text(errors="replace"):
        if not server.alive() or time.monotonic() > deadline:
            ended = not server.alive()
            server.kill()
            lines = log.read_text(errors="replace").strip().splitlines()
            last = lines[-1] if lines else "no output"
            why = (
                f"ended (exit {process.returncode})"
                if ended
                else f"was not ready in {timeout_s:g} s"
            )
            raise HarnessError(f"the Triton server on port {port} {why}: {last} (log: {log})")
        time.sleep(_POLL_S)
    return server
