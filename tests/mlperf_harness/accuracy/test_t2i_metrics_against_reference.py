"""Our FID and CLIP score against MLCommons' accuracy_coco.py itself, with torch, on the same images,
captions, statistics and seeded weights of the official architectures (tests/
sdxl_metrics_reference.py, the reference's code from the mirror of mlcommons/inference). Skipped
where torch, torchvision or open_clip is not installed (CI) or the mirror is absent; slow (minutes:
both sides run full-size Inception-v3 and ViT-B/32). MLPERF_SDXL_REFERENCE_SITE names a folder of
the reference's other pins (SciPy 1.10.1, pandas, ijson) for the reference's process alone."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest
from sdxl_metrics_reference import MIRROR, main

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("torch", "torchvision", "open_clip")),
        reason="torch, torchvision and open_clip are not installed (CPU build)",
    ),
    pytest.mark.skipif(
        not MIRROR.is_dir() or shutil.which("git") is None,
        reason="no mirror of mlcommons/inference",
    ),
]


def test_our_fid_and_clip_score_equal_accuracy_coco_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = os.environ.get("MLPERF_SDXL_REFERENCE_SITE")
    argv = ["--work", str(tmp_path), "--images", "4", "--small", "4"]
    code = main(argv + (["--reference_site", site] if site else []))
    out = capsys.readouterr().out
    assert code == 0 and "AGREE" in out, out
