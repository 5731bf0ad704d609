"""The command line the ResNet-50 workflow actions share: flag names and defaults of the run's own
command line (cli/options.py), so a path given to an action means what it means to the run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from mlperf_harness.benchmarks.resnet50.resources import default_data_dir
from mlperf_harness.cli.parsing import (
    OneLineParser,
    add_scratch_flag,
    run_entry_point,
    scratch_path,
)

# An action: parsed flags and the scratch path in, what it did printed; HarnessError on failure.
Action = Callable[[argparse.Namespace, Path], None]


def action_parser(prog: str, description: str) -> OneLineParser:
    parser = OneLineParser(prog=prog, description=description)
    add_scratch_flag(parser)
    return parser


def add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_dir",
        type=Path,
        help="the ImageNet validation set: <data_dir>/imagenet/val_map.txt and the images beside "
        "it, or <data_dir>/val_map.txt (default: <scratch>/data)",
    )


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no_progress",
        dest="progress",
        action="store_false",
        help="no progress bar (e.g. in batch logs)",
    )


def run_action(
    parser: OneLineParser, action: Action, argv: Sequence[str] | None, environ: Mapping[str, str]
) -> int:
    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        # The environment is read here, in the entry point, as the run's command line does.
        action(args, scratch_path(args.scratch_path, environ))
        return 0

    return run_entry_point(parser.prog, run)


def comma_list(text: str) -> tuple[str, ...]:
    # Names are checked by preprocess_data, which owns the list of formats.
    formats = tuple(part.strip() for part in text.split(","))
    if not all(formats):
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {text!r}")
    return formats


def data_dir(args: argparse.Namespace, scratch: Path) -> Path:
    chosen: Path = args.data_dir or default_data_dir(scratch)
    return chosen
