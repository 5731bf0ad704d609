"""A scratch that already holds everything is only read (it may be read-only, or another user's);
what a run writes there gets the mode the umask gives, so that others can use it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_support import (
    SHORT_RUN,
    Harness,
    in_private_mount,
    private_mounts_refusal,
    snapshot,
)

from mlperf_harness.benchmarks.resnet50.benchmark import BENCHMARK
from mlperf_harness.cli.main import run_benchmark_cli


def _run_args(model: Path, images: Path, scratch: Path, logs: Path) -> list[str]:
    return [
        "--model_path", str(model), "--data_dir", str(images), "--scratch_path", str(scratch),
        "--log_dir", str(logs), *SHORT_RUN,
    ]  # fmt: skip


@pytest.fixture
def read_only() -> Iterator[str]:
    """How this machine makes a directory read-only for a child process: a read-only bind mount in
    a private mount namespace (works for root too), else, for a user other than root, modes."""
    refusal = private_mounts_refusal()
    if refusal is None:
        yield "mount"
    elif os.geteuid() != 0:
        yield "modes"
    else:
        pytest.skip(f"root ignores file modes, and no private mount namespace: {refusal}")


def test_a_prepared_scratch_is_used_read_only(
    read_only: str, harness: Harness, tiny_model: Path, images: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    assert run_benchmark_cli(BENCHMARK, _run_args(tiny_model, images, scratch, tmp_path / "1")) == 0
    before = snapshot(scratch)
    command = harness.command(*_run_args(tiny_model, images, scratch, tmp_path / "2"))
    if read_only == "mount":
        setup = f"mount --bind {scratch} {scratch} && mount -o remount,bind,ro {scratch}"
        done = harness.run(in_private_mount(setup, command))
    else:
        modes = {path: path.stat().st_mode for path in [scratch, *scratch.rglob("*")]}
        for path in modes:
            path.chmod(stat.S_IMODE(modes[path]) & ~0o222)
        try:
            done = harness.run(command)
        finally:
            for path, mode in modes.items():
                path.chmod(stat.S_IMODE(mode))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "2" / "result.json").is_file()
    assert snapshot(scratch) == before


def _group_writable_umask() -> None:
    os.umask(0o002)  # a group shares the scratch


def test_what_a_run_writes_has_the_umask_s_mode(
    harness: Harness, tiny_model: Path, images: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    # int8: the engine, its calibration cache and the quantizer's files are written too.
    command = harness.command(
        *_run_args(tiny_model, images, scratch, tmp_path / "logs"), "--precision", "int8"
    )
    done = harness.run(command, preexec_fn=_group_writable_umask)
    assert done.returncode == 0, done.stderr
    written = [scratch, *scratch.rglob("*")]
    assert any(path.name.endswith(".json") and "calibration" in str(path) for path in written)
    modes = {
        str(path.relative_to(scratch)): oct(stat.S_IMODE(path.lstat().st_mode)) for path in written
    }
    wrong = {
        name: mode
        for name, mode in modes.items()
        if mode != (oct(0o775) if (scratch / name).is_dir() else oct(0o664))
    }
    assert wrong == {}
