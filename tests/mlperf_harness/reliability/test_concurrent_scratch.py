"""Runs that share a scratch: a second run waits for work it needs that another run is doing (saying
so), then uses what that run built; work that is already done takes no lock at all.

Each test holds a piece's lock itself while it starts the runs (a gate): both runs are then sure to
meet at that piece, however fast or slow this machine is.
"""

from __future__ import annotations

import signal
import textwrap
from pathlib import Path

from reliability_support import PREPROCESS_DATA, SHORT_RUN, Harness, snapshot

from mlperf_harness.benchmarks.resnet50.resources import default_preprocessed_dir, stand_in_dir
from mlperf_harness.datasets.imagenet.preprocess import FP32, preprocess_data
from mlperf_harness.scratch_lock import exclusive

WAITING = "waiting for another run to finish"

# A run whose preprocessing step reports how many samples it computed.
PROBED_RUN = textwrap.dedent(
    """
    import sys
    from mlperf_harness.benchmarks.resnet50 import benchmark
    from mlperf_harness.cli.main import run_benchmark_cli

    preprocess = benchmark.preprocess_data

    def probed(*args, **kwargs):
        report = preprocess(*args, **kwargs)
        print(f"[probe] preprocessed {report.processed}", file=sys.stderr, flush=True)
        return report

    benchmark.preprocess_data = probed
    sys.exit(run_benchmark_cli(benchmark.BENCHMARK, sys.argv[1:]))
    """
)


def test_two_runs_on_a_fresh_scratch_build_each_piece_once(
    harness: Harness, tiny_model: Path, images: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    runs = []
    # Both runs build the engine (one waits for the other), then meet at preprocessing.
    with exclusive(default_preprocessed_dir(scratch, images), "test gate"):
        for name in ("a", "b"):
            command = harness.script(
                PROBED_RUN,
                "--model_path", tiny_model,
                "--data_dir", images,
                "--scratch_path", scratch,
                "--log_dir", tmp_path / f"logs_{name}",
                *SHORT_RUN,
            )  # fmt: skip
            runs.append(harness.start(command, tmp_path / f"{name}.log"))
        for run in runs:
            run.wait_for(f"{WAITING} preprocessing")
    finished = [run.finish() for run in runs]

    for name, done in zip("ab", finished, strict=True):
        assert done.returncode == 0, done.stderr
        assert done.stderr.count(f"{WAITING} preprocessing") == 1  # said once, while waiting
        assert (tmp_path / f"logs_{name}" / "result.json").is_file()
    outputs = "".join(done.stderr for done in finished)
    assert outputs.count("generate_engines: building") == 1
    counts = sorted(line.split()[-1] for line in outputs.splitlines() if "[probe]" in line)
    assert counts == ["0", "40"]  # the second run used the first one's samples


# The stand-in build takes a minute: this run builds a tiny stand-in instead, through the same
# ensure_stand_in, and reports each build.
PROBED_STAND_IN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from mlperf_harness.benchmarks.resnet50 import resources, stand_in_model
    from mlperf_harness.hashing import file_sha256
    from reliability_support import write_tiny_model

    def build(model_path, work_dir, seed=0, **kwargs):
        print("[probe] building the stand-in", file=sys.stderr, flush=True)
        time.sleep(1)
        write_tiny_model(model_path)
        return stand_in_model.StandInReport(
            model_path, seed, file_sha256(model_path), 1.0, 1, 1, 1.0, {}, 1.0
        )

    stand_in_model.build_stand_in_model = build
    path, record = resources.ensure_stand_in(Path(sys.argv[1]))
    print(f"[probe] using {path} {record.sha256}", file=sys.stderr, flush=True)
    """
)


def test_two_runs_build_the_stand_in_once(harness: Harness, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    with exclusive(stand_in_dir(scratch), "test gate"):
        runs = [
            harness.start(harness.script(PROBED_STAND_IN, scratch), tmp_path / f"{name}.log")
            for name in ("a", "b")
        ]
        for run in runs:
            run.wait_for(f"{WAITING} building the ResNet-50 stand-in")
    finished = [run.finish() for run in runs]
    for done in finished:
        assert done.returncode == 0, done.stderr
    outputs = "".join(done.stderr for done in finished)
    assert outputs.count("[probe] building the stand-in") == 1
    assert len({line for line in outputs.splitlines() if "[probe] using" in line}) == 1


def test_a_prepared_directory_takes_no_lock_and_is_not_written(
    harness: Harness, images: Path, tmp_path: Path
) -> None:
    out = tmp_path / "preprocessed"
    preprocess_data(images, out, (FP32,), workers=1, progress=False)
    # Another run holds the lock (writing, say, another format): this run needs nothing.
    with exclusive(out, "test gate"):
        before = snapshot(tmp_path)
        command = harness.script(
            PREPROCESS_DATA, "--data_dir", images, "--preprocessed_dir", out,
            "--formats", FP32, "--scratch_path", tmp_path / "scratch", "--no_progress",
        )  # fmt: skip
        done = harness.run(command, timeout=60)
        after = snapshot(tmp_path)
    assert done.returncode == 0, done.stderr
    assert WAITING not in done.stderr
    assert "0 processed, 40 skipped (up to date) of 40" in done.stdout
    assert after == before


def test_a_waiting_run_ends_on_ctrl_c(harness: Harness, images: Path, tmp_path: Path) -> None:
    out = tmp_path / "preprocessed"
    with exclusive(out, "test gate"):
        command = harness.script(
            PREPROCESS_DATA, "--data_dir", images, "--preprocessed_dir", out,
            "--scratch_path", tmp_path / "scratch", "--no_progress",
        )  # fmt: skip
        run = harness.start(command, tmp_path / "run.log")
        run.wait_for(WAITING)
        run.process.send_signal(signal.SIGINT)  # as Ctrl-C sends it
        done = run.finish(timeout=30)
    assert done.returncode == 130, done.stderr
    # (stdout and stderr share the log: the order of their lines is not kept)
    assert "preprocess_data: interrupted" in done.stderr.splitlines()
    assert "Traceback" not in done.stderr
