"""`serve --triton_runtime python_backend` (the default): the tritonserver binary that PyTriton's
wheel carries, run by us on a model repository of our own (model_repository.py), whose instances
run our runners inside Triton's Python backend stubs (backend_model.py).

This process prepares the model first (engines built or found in the cache, data preprocessed),
runs one warm-up batch to learn the served tensors and the identity record, and lets the runner go;
then it starts tritonserver with the same flags the PyTriton runtime gives it (address, port,
restricted control APIs, keepalive, exit timeout), waits until the model is ready, and stops it on
SIGTERM or Ctrl-C: Triton answers the requests it holds, then ends its instances.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from mlperf_harness.errors import HarnessError
from mlperf_harness.triton.addresses import DEFAULT_LISTEN, ServerAddress
from mlperf_harness.triton.backend_model import ERROR_FILE
from mlperf_harness.triton.model_repository import SPEC_FILE, model_config, write_repository
from mlperf_harness.triton.serve import (
    CONTROL_APIS,
    EXIT_TIMEOUT_S,
    Served,
    describe,
    find_triton_libraries,
    print_stopping,
    ready_line,
    stop_on_signal,
    stub_path,
)
from mlperf_harness.triton.served_model import KEEPALIVE_MS, MODEL_VERSION
from mlperf_harness.triton.server_process import STOPPED_LINE, die_with_parent

ACCESS_HEADER = "triton-access-token"  # the header Triton's restricted protocols ask for
READY_POLL_S = 0.2
# The Python backend's shared memory per instance starts small and grows in steps this large: a
# batch of samples on the wire is tens of MB.
SHM_GROWTH_BYTES = 64 << 20


def tritonserver_files() -> Path:
    """The server's files in PyTriton's wheel: bin/, backends/, the stubs of each Python."""
    from pytriton.utils.distribution import get_root_module_path

    return Path(get_root_module_path()) / "tritonserver"


def backend_directory(workspace: Path) -> Path:
    """Triton's backends for this server: the Python backend with the stub of this interpreter's
    version (PyTriton's wheel keeps one per version aside). Copied, not linked: the backend looks
    for its stub beside its own library."""
    source = tritonserver_files() / "backends" / "python"
    target = workspace / "backends" / "python"
    target.mkdir(parents=True)
    for name in ("libtriton_python.so", "triton_python_backend_utils.py"):
        shutil.copy2(source / name, target / name)
    shutil.copy2(stub_path(), target / "triton_python_backend_stub")
    return workspace / "backends"


def tritonserver_command(
    repository: Path, backends: Path, listen: str, port: int, control_key: str
) -> list[str]:
    """The flags serve_pytriton gives PyTriton's TritonConfig, as tritonserver's own."""
    return [
        str(tritonserver_files() / "bin" / "tritonserver"),
        f"--model-repository={repository}",
        f"--backend-directory={backends}",
        f"--grpc-address={listen}",
        f"--grpc-port={port}",
        "--allow-http=false",
        "--allow-metrics=false",
        f"--exit-timeout-secs={EXIT_TIMEOUT_S}",
        # The client's keepalive pings (served_model.KEEPALIVE_MS), with calls in flight or not.
        "--grpc-keepalive-permit-without-calls=true",
        f"--grpc-http2-min-recv-ping-interval-without-data={KEEPALIVE_MS // 2}",
        f"--grpc-restricted-protocol={','.join(CONTROL_APIS)}:{ACCESS_HEADER}={control_key}",
        # Unique per server: two servers on one host must not share the stubs' memory regions.
        f"--backend-config=python,shm-region-prefix-name=mlperf_{port}_{os.getpid()}_",
        f"--backend-config=python,shm-growth-byte-size={SHM_GROWTH_BYTES}",
    ]


def tritonserver_environment() -> dict[str, str]:
    """The server's libraries (PyTriton's wheel keeps them beside its package) and, first on PATH,
    this interpreter: the stub takes its standard library and packages from the environment of
    the `python3` it finds there (interpreter.py), this process's own."""
    from pytriton.utils.distribution import get_libs_path

    env = dict(os.environ)
    libs = str(get_libs_path())
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        part for part in (env.get("LD_LIBRARY_PATH"), libs) if part
    )
    env["PATH"] = os.pathsep.join(
        part for part in (str(Path(sys.executable).parent), env.get("PATH")) if part
    )
    return env


def connect_address(listen: str, port: int) -> ServerAddress:
    """Where this host reaches a server listening on `listen`."""
    return ServerAddress(DEFAULT_LISTEN if listen in ("0.0.0.0", "::") else listen, port)


def instance_errors(workspace: Path, instances: int) -> list[str]:
    errors = []
    for index in range(instances):
        path = workspace / ERROR_FILE.format(index=index)
        if path.is_file():
            errors.append(f"instance {index}: {path.read_text().strip()}")
    return errors


def failure(workspace: Path, instances: int, log_file: Path, what: str) -> HarnessError:
    errors = instance_errors(workspace, instances)
    if errors:
        return HarnessError(
            f"the model did not start ({'; '.join(errors)}); Triton's log: {log_file}"
        )
    return HarnessError(f"{what}: see {log_file}")


def wait_until_ready(
    process: subprocess.Popen[bytes], address: ServerAddress, model: str, workspace: Path,
    instances: int, log_file: Path,
) -> None:  # fmt: skip
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(str(address))
    try:
        while True:
            if process.poll() is not None:
                raise failure(
                    workspace, instances, log_file,
                    f"the Triton server ended (exit {process.returncode}) before it was ready",
                )  # fmt: skip
            with contextlib.suppress(Exception):  # not listening yet, or the model still loading
                if client.is_model_ready(model, str(MODEL_VERSION)):
                    return
            time.sleep(READY_POLL_S)
    finally:
        client.close()


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM: Triton stops taking requests, answers those it holds (EXIT_TIMEOUT_S), ends its
    instances and exits; killed if it takes much longer."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(EXIT_TIMEOUT_S + 30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_python_backend(
    served: Served, argv: Sequence[str], listen: str, port: int, control_key: str, log_file: Path
) -> None:
    find_triton_libraries()
    # The instances warm up their own runners; this process only learns the served tensors.
    first = served.runners[0]
    with first:
        described = describe(served, first, served.prepared.store.warmup_batch(served.batch_size))
    identity = described.identity
    instances = len(set(served.devices))  # one instance process per device (backend_model.py)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mlperf-triton-") as directory:
        workspace = Path(directory)
        spec_path = workspace / SPEC_FILE
        config_text = model_config(
            identity.model_name, described.inputs(), described.outputs(), served.batch_size,
            served.queue_delay_us, instances, spec_path,
        )  # fmt: skip
        spec = {
            "argv": list(argv),
            "cwd": os.getcwd(),
            "workspace": str(workspace),
            "instances": instances,
            "identity": identity.to_json(),
        }
        repository = write_repository(workspace, identity.model_name, config_text, spec)
        command = tritonserver_command(
            repository, backend_directory(workspace), listen, port, control_key
        )
        serving = threading.Event()
        with stop_on_signal(serving) as stop, open(log_file, "ab") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=tritonserver_environment(),
                preexec_fn=die_with_parent,  # a serve killed outright takes the server with it
            )
            try:
                wait_until_ready(
                    process, connect_address(listen, port), identity.model_name, workspace,
                    instances, log_file,
                )  # fmt: skip
                serving.set()
                print(ready_line(identity, listen, port, log_file), flush=True)
                while not stop.wait(0.5):
                    if process.poll() is not None:
                        raise failure(
                            workspace, instances, log_file, "the Triton server stopped by itself"
                        )
                print_stopping()
            finally:
                stop_server(process)
    print(STOPPED_LINE, file=sys.stderr, flush=True)
