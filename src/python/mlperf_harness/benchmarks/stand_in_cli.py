"""The `stand_in` entry point of a benchmark with an embedded stand-in (`pants run
benchmarks/<name>:stand_in`): build the stand-in under the scratch path, or find it built, and print
its record as JSON, where its files are, and that it is not a valid MLPerf result.

What a stand-in holds (its record, its files, an extra model a flag asks for) is the benchmark's own:
its stand_in.py adds those flags and says what to print about its files.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mlperf_harness.cli.parsing import (
    OneLineParser,
    add_scratch_flag,
    run_entry_point,
    scratch_path,
)


class _HasRecord(Protocol):
    @property
    def record(self) -> Any: ...  # a dataclass: what the build measured


Built = TypeVar("Built", bound=_HasRecord)


def stand_in_parser(benchmark: str) -> OneLineParser:
    """The entry point's parser with --scratch_path; `benchmark` is the name the user knows."""
    parser = OneLineParser(
        prog="stand_in", description=f"Build the {benchmark} stand-in and print what it measured."
    )
    add_scratch_flag(parser)
    return parser


def run_stand_in(
    parser: OneLineParser,
    argv: Sequence[str] | None,
    ensure_stand_in: Callable[[Path], Built],
    report: Callable[[argparse.Namespace, Built], None],
    not_valid: str | None,
) -> int:
    """Parse argv (sys.argv[1:] when None), build or find the stand-in under the scratch path, then
    print its record as JSON, `report(args, built)` (where its files are, anything a flag asked
    for) and last the `not_valid` line where there is one; a problem the user can fix is one line
    and exit 2, as for every entry point."""

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        built = ensure_stand_in(scratch_path(args.scratch_path, os.environ))
        print(json.dumps(dataclasses.asdict(built.record), indent=2))
        report(args, built)
        if not_valid is not None:
            print(not_valid)
        return 0

    return run_entry_point("stand_in", run)
