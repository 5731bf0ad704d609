"""gptj-99.9 (edge: SingleStream, Offline) staged for v5.0 through the one
submission command, with TEST06 (tests/gptj_v5_0_staging.py says what is checked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gptj_v5_0_staging import check_staged, stage

# Six runs of the stand-in (built first, about a minute) and the pipeline: minutes, so CI's slow
# set (tests/conftest.py).
pytestmark = pytest.mark.slow


def test_gptj_99_9_stages_for_v5_0_with_test06(tmp_path: Path) -> None:
    scenarios = ("SingleStream", "Offline")
    stage(
        "gptj-99.9",
        "edge",
        scenarios,
        ("--config_ver", "high_accuracy"),
        tmp_path / "scratch",
        tmp_path / "out",
    )
    check_staged("gptj-99.9", "edge", scenarios, tmp_path / "out")
