"""Pieces of the download_data and preprocess_data actions that several benchmarks share: a
download_data that only checks the data directory (for data this harness cannot fetch), and the
closing line of a preprocess_data that works item by item and keeps finished items.

What the data directory must hold, and how to get it, is each benchmark's own (its actions.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from mlperf_harness.benchmarks.action_cli import action_parser, run_action


def main_check_data(
    argv: Sequence[str] | None,
    environ: Mapping[str, str],
    description: str,
    add_data_dir_flag: Callable[[argparse.ArgumentParser], None],
    default_data_dir: Callable[[Path], Path],
    check: Callable[[Path], str],
) -> int:
    """A benchmark's download_data action for data it cannot fetch: `check` the data directory
    (--data_dir, added by `add_data_dir_flag`; default `default_data_dir(scratch)`). `check` raises
    HarnessError with one line naming what is missing and how to get it, or returns what is there,
    printed after "download_data: "."""
    parser = action_parser("download_data", description)
    add_data_dir_flag(parser)

    def action(args: argparse.Namespace, scratch: Path) -> None:
        directory: Path = args.data_dir or default_data_dir(scratch)
        print(f"download_data: {check(directory)}")

    return run_action(parser, action, argv, environ)


class ItemsDone(Protocol):
    """What a resumable preprocessing reports: items made now, items kept from before, its time."""

    @property
    def processed(self) -> int: ...

    @property
    def skipped(self) -> int: ...

    @property
    def seconds(self) -> float: ...


def preprocessed_line(items: str, report: ItemsDone, manifest: Path) -> str:
    """preprocess_data's closing line: `items` (e.g. "500 images"), how many of them were
    preprocessed now and how many were already done, the time, and where the manifest is."""
    return (
        f"preprocess_data: {items} ({report.processed} preprocessed, {report.skipped} already "
        f"done) in {report.seconds:.1f} s; manifest: {manifest}"
    )
