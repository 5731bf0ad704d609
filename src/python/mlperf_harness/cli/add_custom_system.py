"""The add_custom_system action: register this machine and write its config stub to fill in."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.systems.custom import DEFAULT_CONFIG_DIR, add_custom_system
from mlperf_harness.systems.detect import detect_system


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="add_custom_system",
        description="Register this machine as a custom system and write a config stub to fill in.",
    )
    parser.add_argument("--name", help="the system's name (default: detected, e.g. Intel-Xeon_2c)")
    parser.add_argument(
        "--config_dir",
        type=Path,
        default=DEFAULT_CONFIG_DIR,
        help=f"where custom systems live (default: {DEFAULT_CONFIG_DIR})",
    )
    parser.add_argument(
        "--benchmark",
        dest="benchmarks",
        action="append",
        required=True,
        help="a benchmark to write settings for (repeat for several)",
    )
    parser.add_argument(
        "--allow_known",
        action="store_true",
        help="register even a known system (then give it a --name of its own)",
    )

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        path = add_custom_system(
            detect_system(),
            args.name,
            args.config_dir,
            args.benchmarks,
            allow_known=args.allow_known,
        )
        print(f"wrote {path}: fill in the settings to override (null inherits the defaults)")
        return 0

    return run_entry_point(parser.prog, run)


if __name__ == "__main__":
    raise SystemExit(main())
