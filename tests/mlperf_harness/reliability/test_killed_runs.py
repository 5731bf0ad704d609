"""A run killed during preparation (SIGKILL, SIGTERM) leaves no process behind, loses seconds of
preprocessing rather than the first half-minute, and what it left half-built is cleaned up by the
next run: no temporary folder in /tmp, no half-built engine."""

from __future__ import annotations

import os
import re
import shutil
import signal
import textwrap
import time
from pathlib import Path

import pytest
from reliability_support import GENERATE_ENGINES, PREPROCESS_DATA, Harness, write_images

CHUNK = 16  # preprocess_data's chunk: samples a worker hands back at a time
WORKERS = 2


@pytest.fixture(scope="module")
def slow_images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Large noise JPEGs decode slowly: preprocessing is still busy when the test kills it.
    return write_images(tmp_path_factory.mktemp("slow_images"), 64, size=(800, 600))


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    pending = [pid]
    while pending:
        parent = pending.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = {int(child) for child in children.read_text().split()}
            except OSError:
                continue
            pending += kids - found
            found |= kids
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has ended; only its parent (here: init) has yet to reap it


def _processed(stdout: str) -> tuple[int, int]:
    match = re.search(r"(\d+) processed, (\d+) skipped", stdout)
    assert match is not None, stdout
    return int(match.group(1)), int(match.group(2))


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_preprocessing_run_leaves_no_process_and_little_to_redo(
    signum: int, harness: Harness, slow_images: Path, tmp_path: Path
) -> None:
    out = tmp_path / "preprocessed"
    argv: list[str | Path] = ["--data_dir", slow_images, "--preprocessed_dir", out]
    argv += ["--formats", "fp32"]
    argv += ["--workers", str(WORKERS), "--scratch_path", tmp_path / "scratch", "--no_progress"]
    run = harness.start(harness.script(PREPROCESS_DATA, *argv), tmp_path / "run.log")
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        # Past the first chunks, with every worker busy.
        while len(list(out.glob("fp32/*.npy"))) < 3 * CHUNK:
            assert run.process.poll() is None, run.output()
            assert time.monotonic() < deadline, run.output()
            time.sleep(0.01)
        workers = _descendants(run.process.pid)
        written = len(list(out.glob("fp32/*.npy")))
        run.process.send_signal(signum)
        run.finish(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers) >= WORKERS
        assert [pid for pid in workers if _alive(pid)] == []
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)  # today's leftovers: ours to end
    if signum != signal.SIGKILL:
        return
    done = harness.run(harness.script(PREPROCESS_DATA, *argv), timeout=120)
    assert done.returncode == 0, done.stderr
    processed, skipped = _processed(done.stdout)
    assert processed + skipped == 64
    # Lost at most the chunks the workers had in flight.
    assert skipped >= written - WORKERS * CHUNK
    assert skipped >= CHUNK


KILLED_INT8_BUILD = textwrap.dedent(
    """
    import os, signal, sys
    from mlperf_harness.benchmarks.resnet50.generate_engines import main
    from mlperf_harness.engines.onnxruntime import build

    def killed(self):  # the calibrator's first read: the quantizer's temporary files exist
        os.kill(os.getpid(), signal.SIGKILL)

    build._StridedReader.get_next = killed
    sys.exit(main(sys.argv[1:]))
    """
)


def _temporaries(temp: Path) -> list[str]:
    # ONNX Runtime's telemetry keeps a small ".ses" file there on purpose, run after run.
    return [path.name for path in temp.iterdir() if path.name != ".ses"]


def test_a_killed_int8_build_leaves_nothing_once_the_next_build_ran(
    harness: Harness, tiny_model: Path, images: Path, tmp_path: Path
) -> None:
    model = tmp_path / "model" / tiny_model.name
    model.parent.mkdir()
    shutil.copyfile(tiny_model, model)
    scratch, temp = tmp_path / "scratch", tmp_path / "tmp"
    temp.mkdir()
    argv: list[str | Path] = ["--model_path", model, "--data_dir", images, "--precision", "int8"]
    argv += ["--scratch_path", scratch]
    env = {"TMPDIR": str(temp)}
    killed = harness.run(harness.script(KILLED_INT8_BUILD, *argv), env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _temporaries(temp) == []  # nothing in /tmp that no later run would find

    done = harness.run(harness.command(*argv, module=GENERATE_ENGINES), env=env)
    assert done.returncode == 0, done.stderr
    assert "removing a half-built engine" in done.stderr
    engines = scratch / "engines" / "resnet50"
    assert [path.name for path in engines.iterdir() if path.is_dir()] == [
        path.name for path in engines.glob("onnxruntime-int8-*")
    ]
    assert _temporaries(temp) == []
    assert list(model.parent.iterdir()) == [model]  # nothing written beside the model
