"""What the device scripts' closing tables share (benchmarks/gpu_table.py, triton/device_table.py):
a run's figures as result.json holds them, and the command line that prints a directory's table."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

MS = 1e6  # ns per ms


def rate(run: dict[str, Any]) -> float:
    """samples/s: Offline's, SingleStream's and MultiStream's, or Server's completed samples/s
    (result.json holds one of the two)."""
    value = run.get("samples_per_second") or run.get("completed_samples_per_second") or 0.0
    return float(value)


def verdict(run: dict[str, Any]) -> str:
    return {True: "VALID", False: "INVALID", None: "-"}[run.get("result_valid")]


def table_main(
    program: str, format_table: Callable[[Path], str], argv: Sequence[str] | None = None
) -> int:
    """Print the table of one directory of result files; 2 with a usage line for anything else."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not Path(args[0]).is_dir():
        print(f"usage: {program} <directory of result JSON files>", file=sys.stderr)
        return 2
    print(format_table(Path(args[0])))
    return 0
