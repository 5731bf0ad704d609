"""data_actions: a check-only download_data prints what its check finds or fails in one line; the
closing line of a resumable preprocess_data."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest
from one_line_errors import one_error_line

from mlperf_harness.benchmarks.data_actions import main_check_data, preprocessed_line
from mlperf_harness.errors import HarnessError


def _add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data_dir", type=Path, help="the toy set (default: <scratch>/data/toy)")


def _check(directory: Path) -> str:
    if not (directory / "toy.json").is_file():
        raise HarnessError(f"no toy.json in {directory}: make one")
    return f"{directory}: the toy set is present"


def _main(argv: list[str]) -> int:
    return main_check_data(
        argv,
        {},
        "Check the toy set.",
        _add_data_dir_flag,
        lambda scratch: scratch / "data" / "toy",
        _check,
    )


def test_prints_what_the_check_found_in_the_default_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "data" / "toy"
    directory.mkdir(parents=True)
    (directory / "toy.json").write_text("{}")

    assert _main(["--scratch_path", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"download_data: {directory}: the toy set is present\n"


def test_what_is_missing_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(["--scratch_path", str(tmp_path), "--data_dir", str(tmp_path)]) == 2

    captured = capsys.readouterr()
    assert one_error_line(captured.err, "download_data") == (
        f"download_data: error: no toy.json in {tmp_path}: make one"
    )
    assert captured.out == ""


def test_help_lists_the_data_dir_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["--help"]) == 0

    out = capsys.readouterr().out
    assert out.startswith("usage: download_data ")
    assert "--data_dir" in out
    assert "Check the toy set." in out


@dataclass(frozen=True)
class _Report:
    processed: int
    skipped: int
    seconds: float


def test_the_preprocessed_line() -> None:
    line = preprocessed_line("5 cases", _Report(2, 3, 1.25), Path("/p/manifest.json"))

    assert line == (
        "preprocess_data: 5 cases (2 preprocessed, 3 already done) in 1.2 s; "
        "manifest: /p/manifest.json"
    )
