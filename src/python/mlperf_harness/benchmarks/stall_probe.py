"""A process beside a harness run that notes when the host did not run it on time.

`python -m mlperf_harness.benchmarks.stall_probe --out stalls.json` sleeps a millisecond at a time
until SIGTERM or SIGINT, and keeps each wake-up that came more than `--late_ms` late: when the
sleep began on the host's monotonic clock, and how late. A Server run whose arrivals from LoadGen
stopped for tens of milliseconds (gpu_table names such bins) was stopped either in its own process
(LoadGen's issue thread waiting for the GIL under its Python binding) or by the host (every process
descheduled); this process has its own GIL, so it is late only in the second case, on a host
with cores to spare (a GPU host's 16-32). On this project's 2-core VM the run itself keeps both
cores busy, and the probe is late now and then for that alone (15 times over 5 ms in a 14 s sim
Server run, at most 19 ms). The device scripts run it beside every harness run
(benchmarks/device_lib.sh), and gpu_table counts the arrival dips it was late in, by the
timeline's first issue on the same clock.

It costs the run one core's wake-ups, a thousand a second, and nothing inside the run's process.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.errors import HarnessError
from mlperf_harness.json_files import read_json

FORMAT = "mlperf_harness.stall_probe/1"
MAX_KEPT = 100_000  # late wake-ups kept; more are counted only (a host that stalls all the time)


@dataclass(frozen=True)
class Stall:
    start_ns: int  # when the sleep began (time.monotonic_ns)
    late_ns: int  # how much later than asked it returned


@dataclass(frozen=True)
class StallRecord:
    period_ns: int
    late_ns: int  # the threshold: wake-ups later than this are kept
    started_ns: int
    ended_ns: int
    stalls: tuple[Stall, ...]
    dropped: int  # late wake-ups past MAX_KEPT, counted only

    def late_within(self, start_ns: int, end_ns: int) -> bool:
        """Whether the probe was held up at some time in [start_ns, end_ns): a late sleep spans
        from its start to when the probe ran again."""
        return any(
            stall.start_ns < end_ns and start_ns < stall.start_ns + self.period_ns + stall.late_ns
            for stall in self.stalls
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "about": (
                "Wake-ups of a process sleeping period_ns at a time that came more than late_ns "
                "late: [sleep start, lateness] in ns on the host's monotonic clock."
            ),
            "period_ns": self.period_ns,
            "late_ns": self.late_ns,
            "started_ns": self.started_ns,
            "ended_ns": self.ended_ns,
            "stalls": [[stall.start_ns, stall.late_ns] for stall in self.stalls],
            "dropped": self.dropped,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> StallRecord:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise HarnessError(f"{where} is not a stall probe's record ({FORMAT})")
        try:
            return cls(
                period_ns=int(data["period_ns"]),
                late_ns=int(data["late_ns"]),
                started_ns=int(data["started_ns"]),
                ended_ns=int(data["ended_ns"]),
                stalls=tuple(Stall(int(start), int(late)) for start, late in data["stalls"]),
                dropped=int(data["dropped"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{where} is malformed: {error!r}") from None


def read_stall_record(path: Path) -> StallRecord:
    return StallRecord.from_json(read_json(path), str(path))


def probe(period_ns: int, late_ns: int, running: Callable[[], bool]) -> StallRecord:
    """Sleep period_ns at a time while running() holds; keep the wake-ups later than late_ns."""
    stalls: list[Stall] = []
    dropped = 0
    started = time.monotonic_ns()
    while running():
        before = time.monotonic_ns()
        time.sleep(period_ns / 1e9)
        late = time.monotonic_ns() - before - period_ns
        if late > late_ns:
            if len(stalls) < MAX_KEPT:
                stalls.append(Stall(before, late))
            else:
                dropped += 1
    return StallRecord(period_ns, late_ns, started, time.monotonic_ns(), tuple(stalls), dropped)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="stall_probe",
        description="Note when the host does not run a sleeping process on time, until SIGTERM.",
    )
    parser.add_argument("--out", type=Path, required=True, help="the record (JSON) to write")
    parser.add_argument("--period_ms", type=float, default=1.0, help="each sleep (default 1)")
    parser.add_argument(
        "--late_ms", type=float, default=5.0, help="a wake-up this late is kept (default 5)"
    )
    args = parser.parse_args(argv)
    if args.period_ms <= 0 or args.late_ms <= 0:
        parser.error("--period_ms and --late_ms must be positive")
    stopping = False

    def stop(_signal: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"stall_probe: noting wake-ups over {args.late_ms:g} ms late until SIGTERM", flush=True)
    record = probe(round(args.period_ms * 1e6), round(args.late_ms * 1e6), lambda: not stopping)
    try:
        write_json_atomic(args.out, record.to_json())
    except HarnessError as error:
        print(f"stall_probe: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
