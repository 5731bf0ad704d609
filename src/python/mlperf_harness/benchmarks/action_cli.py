"""The command line every benchmark's workflow actions share (download_model, download_data,
preprocess_data, ...): the run's --scratch_path with its default, a --no_progress flag, and the
run's way of ending (a problem the user can fix is one line on stderr and exit 2, Ctrl-C exit 130).

What an action's flags mean (its model, its data directory) is the benchmark's own: each
benchmark's actions module adds those flags with the run's names and default paths.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

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


def add_mirror_flag(
    parser: argparse.ArgumentParser, flag: str, default_url: str, what: str = "the file"
) -> None:
    """A download's address, overridable by a mirror; what comes from it is still checked against
    the official checksum."""
    parser.add_argument(
        flag,
        default=default_url,
        help=f"a mirror to fetch {what} from; it is still checked against the official checksum "
        "(default: %(default)s)",
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
