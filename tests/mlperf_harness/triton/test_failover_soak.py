"""The failover soak, short (docs/triton.md runs it for minutes): two real servers of the shared
ResNet-50 stand-in, an Offline run across them with one server killed a second in and started
again; the soak's checks hold, and the same checks catch a response logged twice in that run's
logs. Slow (three server starts)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from shared_stand_in import shared_stand_in

# The soak's subprocesses run these modules: imported so that Pants ships them.
import mlperf_harness.benchmarks.resnet50.main
import mlperf_harness.triton.serve  # noqa: F401
from mlperf_harness.triton import failover_soak
from mlperf_harness.triton.soak_checks import check_run, direct_answers

pytestmark = pytest.mark.slow


def test_a_short_soak_loses_nothing_and_its_checks_catch_a_duplicate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "soak"
    argv = [
        "--servers", "2", "--scenarios", "Offline", "--seconds", "6", "--no_accuracy",
        "--first_kill_s", "1", "--kill_every_s", "600", "--down_s", "0.5",
        "--offline_expected_qps", "6", "--work_dir", str(work), "--",
        *shared_stand_in().run_flags(), "--scratch_path", str(tmp_path / "scratch"),
    ]  # fmt: skip
    assert failover_soak.main(argv) == 0
    table = capsys.readouterr().out
    assert "Offline" in table and "each sample once, = direct" in table
    (run,) = json.loads((work / "soak.json").read_text())["runs"]
    assert run["problems"] == [] and run["samples"] == run["logged"] > 0
    assert len(run["outages"]) == 1 and run["outages"][0]["how"] == "SIGKILL"
    assert run["losses"] == 1 and run["resent_samples"] > 0

    # The same logs with one response logged twice: the checks say so.
    logs = tmp_path / "tampered"
    shutil.copytree(work / "Offline", logs)
    log = logs / "mlperf_log_accuracy.json"
    entries = json.loads(log.read_text())
    log.write_text(json.dumps([*entries, entries[0]]))
    check = check_run(
        "Offline", logs, 0, 1.0, [], direct_answers(work / "direct-AccuracyOnly"), None, 99.0
    )
    assert "1 responses logged twice" in check.problems
    assert f"{len(entries) + 1} responses logged of {len(entries)} samples issued" in check.problems
    # The real run's one loss, with no outage given: a server lost for nothing.
    assert any("1 losses recorded for 0 outages" in problem for problem in check.problems)
