"""DLRM-v2's preprocess_data on a disk that fills: one line naming the path and the cause, exit 2,
and neither a set nor its staging directory left behind (a small tmpfs in a private mount
namespace, as test_disk_and_paths.py does it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from criteo_samples import write_raw_day
from reliability_support import in_private_mount

from mlperf_harness.benchmarks.dlrm_v2 import actions

PREPROCESS = (
    f"import sys\nfrom {actions.__name__} import main_preprocess_data\n"
    "sys.exit(main_preprocess_data())\n"
)


@pytest.mark.usefixtures("private_mounts")
def test_a_full_disk_during_preprocessing_is_one_line(tmp_path: Path) -> None:
    write_raw_day(tmp_path / "criteo", 3_000)  # 1,500 pairs: about 1.4 MB of arrays
    target = tmp_path / "small"
    target.mkdir()
    command = [
        sys.executable, "-c", PREPROCESS, "--data_dir", str(tmp_path / "criteo"),
        "--preprocessed_dir", str(target / "day_23"), "--scratch_path", str(tmp_path / "scratch"),
        "--day_rows", "3000", "--no_progress",
    ]  # fmt: skip
    done = subprocess.run(
        in_private_mount(
            f"mount -t tmpfs -o size=512k tmpfs {target}", command, after=f"ls -A {target}"
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "no space left on device" in errors[0], done.stderr
    assert f"cannot write {target}/.day_23.partial" in errors[0]
    listing = done.stdout.splitlines()[2:]  # after the action's own two lines
    assert listing == [], done.stdout
