"""`:run`: every benchmark in every scenario, each in its own process, with a table at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlperf_harness.cli.run_many import main


def test_every_pair_runs_and_a_failure_does_not_stop_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "--benchmarks", "harness_overhead",
            "--scenarios", "offline,singlestream",
            "--log_root", str(tmp_path),
            # A count, not a time (harness_overhead's configs: 1 ms at least): VALID whatever the
            # machine's speed.
            "--min_query_count", "20000",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    assert "harness_overhead Offline       VALID" in out
    assert "harness_overhead SingleStream  VALID" in out
    assert len(list(tmp_path.rglob("result.json"))) == 2

    # A flag no run accepts fails each run; the table says so and the status is 1.
    assert (
        main(["--benchmarks", "harness_overhead", "--log_root", str(tmp_path), "--count", "x"]) == 1
    )
    assert "harness_overhead Offline  failed" in capsys.readouterr().out


def test_names_it_does_not_know_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--benchmarks", "resnet5"]) == 2
    assert "unknown benchmark 'resnet5'" in capsys.readouterr().err
    assert main(["--benchmarks", "bert", "--log_dir", "x"]) == 2
