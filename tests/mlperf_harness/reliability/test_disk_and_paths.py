"""A full disk or a wrong path during preparation: one line naming the path and the cause, exit 2,
and nothing half-written left behind.

A full disk is a small tmpfs in a private mount namespace (no root needed where user namespaces are
allowed; skipped, saying why, where not). A per-process file size limit (RLIMIT_FSIZE: EFBIG, "file
too large") works everywhere and stands in for a full disk in one more test.
"""

from __future__ import annotations

import resource
import signal
from pathlib import Path

import pytest
from reliability_support import SHORT_RUN, Harness, in_private_mount

from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli


def _run_command(
    harness: Harness, model: Path, images: Path, scratch: Path, logs: Path
) -> list[str]:
    return harness.command(
        "--model_path", model, "--data_dir", images, "--scratch_path", scratch, "--log_dir", logs,
        *SHORT_RUN,
    )  # fmt: skip


def _left_behind(listing: str) -> list[str]:
    """Temporary files and half-built engine directories in a `find` listing."""
    return [
        line
        for line in listing.splitlines()
        if line.endswith(".tmp") or ("/.onnxruntime-" in line and not line.endswith(".lock"))
    ]


@pytest.mark.usefixtures("private_mounts")
@pytest.mark.parametrize(
    ("size", "what"),
    [
        ("16k", "engines/resnet50/onnxruntime-fp32"),  # the engine does not fit
        ("1m", "preprocessed/imagenet/"),  # the engine fits, the preprocessed samples do not
    ],
)
def test_a_full_disk_is_one_line_naming_the_path(
    size: str, what: str, harness: Harness, tiny_model: Path, images: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = _run_command(harness, tiny_model, images, scratch, tmp_path / "logs")
    done = harness.run(
        in_private_mount(
            f"mount -t tmpfs -o size={size} tmpfs {scratch}", command, after=f"find {scratch}"
        )
    )
    line = done.error_line("resnet50")
    assert f"cannot write {scratch}/{what}" in line
    assert "no space left on device" in line
    assert _left_behind(done.stdout) == []


def _limit_file_size() -> None:
    # Below one preprocessed sample (602 KB), above the engine; EFBIG instead of death by SIGXFSZ.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, resource.RLIM_INFINITY))


def test_a_file_size_limit_is_one_line_naming_the_output(
    harness: Harness, tiny_model: Path, images: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    command = _run_command(harness, tiny_model, images, scratch, tmp_path / "logs")
    done = harness.run(command, preexec_fn=_limit_file_size)
    line = done.error_line("resnet50")
    # The output that could not be written, not the image that was being read.
    assert f"cannot write {scratch}/preprocessed/imagenet/" in line and ".npy: " in line
    assert "file too large" in line
    assert [path for path in scratch.rglob("*") if path.name.endswith(".tmp")] == []


@pytest.mark.parametrize(
    ("flag", "path", "message"),
    [
        ("--scratch_path", "a_file", "--scratch_path {} is a file, not a directory"),
        ("--scratch_path", "a_file/scratch", "--scratch_path {} cannot be a directory"),
        ("--preprocessed_dir", "a_file", "the preprocessed directory {} is a file"),
    ],
)
def test_a_file_where_a_directory_belongs_is_one_line(
    flag: str,
    path: str,
    message: str,
    tiny_model: Path,
    images: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "a_file").write_text("not a directory\n")
    given = tmp_path / path
    argv = ["--model_path", str(tiny_model), "--data_dir", str(images), *SHORT_RUN]
    argv += ["--scratch_path", str(tmp_path / "scratch"), "--log_dir", str(tmp_path / "logs")]
    argv += [flag, str(given)]
    assert run_benchmark_cli(BENCHMARK, argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error:" in line]
    assert len(errors) == 1
    assert errors[0].startswith(f"resnet50: error: {message.format(given)}")
    assert (tmp_path / "a_file").read_text() == "not a directory\n"
