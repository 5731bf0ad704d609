"""Command-line pieces every entry point shares: one-line errors, number types, the scratch path,
and how an entry point ends."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NoReturn

from mlperf_harness.errors import HarnessError
from mlperf_harness.write_errors import check_directory_path, is_user_fixable, write_error

SCRATCH_ENV = "MLPERF_SCRATCH_PATH"  # NVIDIA's name, read by entry points only (never deeper)
DEFAULT_SCRATCH = Path("build/scratch")


class ParserExit(Exception):
    """argparse wants to end the program (--help, a bad flag); entry points return `status`."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class OneLineParser(argparse.ArgumentParser):
    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        # Hand the status back to the entry point rather than raise SystemExit mid-library.
        if message:
            self._print_message(message, sys.stderr)
        raise ParserExit(status)

    def error(self, message: str) -> NoReturn:
        # argparse prints the whole usage block; one line says it better and keeps logs readable.
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def positive_int(text: str) -> int:
    value = _int(text, "a positive integer")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text, "an integer of 0 or more")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer of 0 or more, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _int(text: str, wanted: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}") from None


def add_scratch_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scratch_path",
        type=Path,
        help=f"models, data, preprocessed samples (default: ${SCRATCH_ENV}, else {DEFAULT_SCRATCH})",
    )


def scratch_path(flag: Path | None, environ: Mapping[str, str]) -> Path:
    """--scratch_path, else $MLPERF_SCRATCH_PATH, else build/scratch; refused if it is a file."""
    if flag is not None:
        path, what = flag, "--scratch_path"
    elif environ.get(SCRATCH_ENV):
        path, what = Path(environ[SCRATCH_ENV]), f"${SCRATCH_ENV}"
    else:
        path, what = DEFAULT_SCRATCH, "the scratch path"
    check_directory_path(path, what)
    return path


def run_entry_point(prog: str, body: Callable[[], int]) -> int:
    """Every entry point's ending: a user error is one line and exit 2, Ctrl-C is exit 130, a
    parser exit keeps its status; anything else is a bug and keeps its traceback."""
    try:
        return body()
    except ParserExit as done:
        return done.status
    except HarnessError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except OSError as error:
        # A write that no code path turned into a HarnessError: still one line when its cause is
        # the disk or a path (full, read-only, a file where a directory belongs), not a bug.
        if not is_user_fixable(error) or not isinstance(error.filename, str):
            raise
        print(f"{prog}: error: {write_error(error, Path(error.filename), 'use')}", file=sys.stderr)
        return 2
