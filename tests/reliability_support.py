"""What the reliability tests (tests/mlperf_harness/reliability) share: small real inputs, and the
harness's entry points run as processes of their own (signals, mounts and concurrent runs need real
processes).

The model is a tiny network with ResNet-50's interface (input `input_tensor:0`, outputs `ArgMax:0`
and `softmax_tensor:0`), written with onnx.helper in milliseconds: the stand-in takes a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mlperf_harness.benchmarks.resnet50 import actions, generate_engines
from mlperf_harness.benchmarks.resnet50 import main as resnet50_main

# The entry points the tests start as processes (imported, so that Pants puts them in the sandbox).
RUN = resnet50_main.__name__
ACTIONS = actions.__name__
GENERATE_ENGINES = generate_engines.__name__
# The preprocess_data action as a process (its pex_binary's entry point).
PREPROCESS_DATA = (
    f"import sys\nfrom {ACTIONS} import main_preprocess_data\nsys.exit(main_preprocess_data())\n"
)
# A run as short as LoadGen allows: these tests are about what happens before and around it.
SHORT_RUN = ("--min_duration_ms", "300", "--min_query_count", "8", "--backend", "onnxruntime")
CALIBRATION_LIST = "cal_image_list_option_1.txt"


def write_tiny_model(path: Path, *, ir_version: int = 7) -> Path:
    rng = np.random.default_rng(0)
    conv = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    head = rng.standard_normal((1001, 8)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["input_tensor:0", "conv"], ["c"], kernel_shape=[3, 3], strides=[8, 8]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "head", "bias"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["softmax_tensor:0"], axis=1),
        helper.make_node("ArgMax", ["logits"], ["ArgMax:0"], axis=1, keepdims=0),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("input_tensor:0", TensorProto.FLOAT, ["n", 3, 224, 224])],
        [
            helper.make_tensor_value_info("ArgMax:0", TensorProto.INT64, ["n"]),
            helper.make_tensor_value_info("softmax_tensor:0", TensorProto.FLOAT, ["n", 1001]),
        ],
        [
            numpy_helper.from_array(conv, "conv"),
            numpy_helper.from_array(head, "head"),
            numpy_helper.from_array(np.zeros(1001, np.float32), "bias"),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=ir_version
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())
    if ir_version <= onnx.IR_VERSION:
        onnx.checker.check_model(str(path))
    return path


def write_images(directory: Path, count: int, size: tuple[int, int] = (160, 120)) -> Path:
    """count noise JPEGs of size (width, height), a val_map.txt, and MLPerf's calibration list
    naming the first 20 (int8 calibration reads it beside real images)."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    names = []
    for i in range(count):
        name = f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        assert cv2.imwrite(str(directory / name), pixels)
        names.append(name)
    (directory / "val_map.txt").write_text("".join(f"{n} {i % 10}\n" for i, n in enumerate(names)))
    (directory / CALIBRATION_LIST).write_text("".join(f"{n}\n" for n in names[:20]))
    return directory


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str

    def error_line(self, prog: str) -> str:
        """The run's one error line: exit 2, no traceback, exactly one `<prog>: error:` line."""
        assert self.returncode == 2, self.stderr
        assert "Traceback" not in self.stderr, self.stderr
        errors = [line for line in self.stderr.splitlines() if line.startswith(f"{prog}: error:")]
        assert len(errors) == 1, self.stderr
        return errors[0]


class Harness:
    """Starts the harness's entry points as child processes with this test's import path."""

    def __init__(self) -> None:
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def command(self, *args: str | Path, module: str = RUN) -> list[str]:
        return [sys.executable, "-m", module, *map(str, args)]

    def script(self, code: str, *args: str | Path) -> list[str]:
        return [sys.executable, "-c", code, *map(str, args)]

    def run(
        self,
        command: Sequence[str],
        *,
        timeout: float = 120,
        preexec_fn: Callable[[], None] | None = None,
        env: dict[str, str] | None = None,
    ) -> Finished:
        done = subprocess.run(
            list(command),
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=preexec_fn,
        )
        return Finished(done.returncode, done.stdout, done.stderr)

    def start(
        self, command: Sequence[str], log: Path, env: dict[str, str] | None = None
    ) -> Started:
        """A child process whose stdout and stderr go to `log` (read while it runs)."""
        with open(log, "wb") as out:
            process = subprocess.Popen(
                list(command), env={**self.env, **(env or {})}, stdout=out, stderr=out
            )
        return Started(process, log)


@dataclass
class Started:
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.process.poll() is None, f"ended before saying {text!r}:\n{self.output()}"
            assert time.monotonic() < deadline, f"never said {text!r}:\n{self.output()}"
            time.sleep(0.02)

    def finish(self, timeout: float = 120) -> Finished:
        try:
            self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        return Finished(self.process.returncode, "", self.output())


def private_mounts_refusal() -> str | None:
    """Why this machine cannot give a test a private mount namespace (None: it can). A small tmpfs
    (a full disk) and a read-only bind mount then need no root: `unshare` maps us to root in a user
    namespace of our own."""
    probe = Path(os.environ.get("TMPDIR", "/tmp"))
    try:
        done = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
             f"mount -t tmpfs -o size=4k tmpfs {probe}"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"cannot run unshare: {error}"
    if done.returncode != 0:
        return f"unshare --user --mount refused: {done.stderr.strip()}"
    return None


def in_private_mount(setup: str, command: Sequence[str], after: str = "") -> list[str]:
    """command, run in a private user and mount namespace after the shell commands `setup`; the
    shell commands `after` run there too, before the namespace (and any tmpfs in it) ends."""
    script = f'{setup} || exit 99; "$@"; status=$?; {after or ":"}; exit $status'
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", *command]


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under root with its inode, size and mtime: any write shows as a difference."""
    found = {}
    for path in sorted(root.rglob("*")):
        status = path.lstat()
        found[str(path.relative_to(root))] = (status.st_ino, status.st_size, status.st_mtime_ns)
    return found
