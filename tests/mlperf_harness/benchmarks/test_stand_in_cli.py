"""stand_in_cli: the stand_in entry point prints the record as JSON, the benchmark's report and the
"not valid" line; a bad flag is one line and exit 2."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest
from one_line_errors import one_error_line

from mlperf_harness.benchmarks.stand_in_cli import run_stand_in, stand_in_parser
from mlperf_harness.errors import HarnessError


@dataclass(frozen=True)
class _Record:
    scratch: str
    heldout: float


class _Built(NamedTuple):
    record: _Record
    model: Path


def _ensure(scratch: Path) -> _Built:
    return _Built(_Record(str(scratch), 0.5), scratch / "model.onnx")


def _main(argv: list[str], not_valid: str | None = "not valid") -> int:
    parser = stand_in_parser("Toy")
    parser.add_argument("--extra", action="store_true")

    def report(args: argparse.Namespace, built: _Built) -> None:
        print(f"model {built.model}")
        if args.extra:
            print("extra")

    return run_stand_in(parser, argv, _ensure, report, not_valid)


def test_prints_the_record_the_report_and_the_not_valid_line_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(["--scratch_path", str(tmp_path), "--extra"]) == 0

    out = capsys.readouterr().out
    record, rest = out.split("}\n")
    assert json.loads(record + "}") == {"scratch": str(tmp_path), "heldout": 0.5}
    assert rest == f"model {tmp_path / 'model.onnx'}\nextra\nnot valid\n"


def test_no_not_valid_line_where_there_is_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(["--scratch_path", str(tmp_path)], not_valid=None) == 0

    assert capsys.readouterr().out.endswith(f"model {tmp_path / 'model.onnx'}\n")


def test_help_names_the_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["--help"]) == 0

    out = capsys.readouterr().out
    assert out.startswith("usage: stand_in ")
    assert "Build the Toy stand-in and print what it measured." in out


def test_a_bad_flag_or_a_failed_build_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(["--bogus"]) == 2
    assert one_error_line(capsys.readouterr().err, "stand_in").endswith("(see --help)")

    def fails(_scratch: Path) -> _Built:
        raise HarnessError("the stand-in reached only 0.1; report this as a bug")

    parser = stand_in_parser("Toy")
    assert (
        run_stand_in(
            parser, ["--scratch_path", str(tmp_path)], fails, lambda _args, _built: None, None
        )
        == 2
    )
    captured = capsys.readouterr()
    assert one_error_line(captured.err, "stand_in").endswith("report this as a bug")
    assert captured.out == ""
