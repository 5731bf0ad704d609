"""What benchmarks/resnet50/device/scaling.sh runs at each size: the settings of that size's own
config (the known system of n of this host's GPUs: H100-SXM-80GBx4 on four of an eight-H100 host),
and the search for Server's highest VALID rate at each size.

    python -m mlperf_harness.benchmarks.scaling_plan plan --gpus "1 2 4 8" [--gpu_name NAME] ...
    python -m mlperf_harness.benchmarks.scaling_plan next_server_rate --start 352000 --step 0.04 \\
        --runs 3 [RESULT.json ...]

`plan` prints one line per size: n, system, precision, LoadGen path, Offline batch, Offline
expected samples/s, Server batch, Server batching timeout (us), Server target queries/s, runners
per GPU. An override given (the script's PRECISION, LOADGEN_PATH, OFFLINE_QPS_PER_GPU,
SERVER_QPS_PER_GPU, STREAMS) wins at every size; what is not given comes from the size's config, and
a size whose system has no config of its own (the CPU defaults) is refused unless every value is
given.

`next_server_rate` prints the next Server target of a size's search, or nothing when the search
ends, from the result.json of the runs made so far at that size (search_next says the rule).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.benchmarks.resnet50 import configs as resnet50_configs
from mlperf_harness.benchmarks.scaling_table import server_target, server_valid
from mlperf_harness.config.registry import ANY_SYSTEM, resolve
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.systems.detect import GpuInfo, SystemInfo, detect_system
from mlperf_harness.systems.known import match_known_system

RATE_QUANTUM = 100.0  # searched Server targets are whole hundreds of queries/s


@dataclass(frozen=True)
class Overrides:
    """The script's environment overrides; None: the size's config decides."""

    precision: str | None = None
    loadgen_path: str | None = None
    offline_qps_per_gpu: float | None = None
    server_qps_per_gpu: float | None = None
    streams: int | None = None


@dataclass(frozen=True)
class SizePlan:
    gpus: int
    system: str
    precision: str
    loadgen_path: str
    offline_batch: int
    offline_qps: float
    server_batch: int
    server_timeout_us: int
    server_qps: float
    streams: int

    def line(self) -> str:
        return (
            f"{self.gpus} {self.system} {self.precision} {self.loadgen_path} {self.offline_batch} "
            f"{self.offline_qps:.0f} {self.server_batch} {self.server_timeout_us} "
            f"{self.server_qps:.0f} {self.streams}"
        )


def size_system(gpu: GpuInfo, gpus: int, host: SystemInfo) -> str:
    """The system name of `gpus` GPUs like `gpu` on `host`'s CPU: the known system, else the
    detected default (e.g. L40Sx4)."""
    info = SystemInfo(host.cpu_model, host.cpu_cores, host.memory_bytes, (gpu,) * gpus)
    return match_known_system(info) or info.default_name


def plan_size(gpus: int, system: str, overrides: Overrides) -> SizePlan:
    """The settings of `system`'s ResNet-50 config for Offline and Server, overrides on top."""
    offline = resolve(resnet50_configs.NAME, Scenario.OFFLINE, system)
    server = resolve(resnet50_configs.NAME, Scenario.SERVER, system)
    own_config = offline.key.system != ANY_SYSTEM and server.key.system != ANY_SYSTEM
    needed = {
        "PRECISION": overrides.precision,
        "OFFLINE_QPS_PER_GPU": overrides.offline_qps_per_gpu,
        "SERVER_QPS_PER_GPU": overrides.server_qps_per_gpu,
    }
    if not own_config and None in needed.values():
        missing = ", ".join(name for name, value in needed.items() if value is None)
        raise HarnessError(
            f"{gpus} GPU(s): {system} has no ResNet-50 config of its own (the CPU defaults would "
            f"run): add it (benchmarks/resnet50/configs.py GPU_RATES, systems/known.py) or set "
            f"{missing}"
        )
    off, srv = offline.settings, server.settings

    def pick(override: Any, value: Any, default: Any) -> Any:
        if override is not None:
            return override
        return default if value is None or not own_config else value

    def rate(per_gpu: float | None, value: float | None) -> float:
        if per_gpu is not None:
            return gpus * per_gpu
        assert value is not None, f"{system}'s config sets no rate"
        return float(value)

    return SizePlan(
        gpus=gpus,
        system=system,
        precision=pick(overrides.precision, srv.precision, "fp16"),
        loadgen_path=pick(overrides.loadgen_path, srv.loadgen_path, "python"),
        offline_batch=pick(None, off.batch_size, 256),
        offline_qps=rate(overrides.offline_qps_per_gpu, off.offline_expected_qps),
        server_batch=pick(None, srv.batch_size, 128),
        server_timeout_us=pick(None, srv.server_batch_timeout_us, 4_000),
        server_qps=rate(overrides.server_qps_per_gpu, srv.server_target_qps),
        streams=pick(overrides.streams, srv.gpu_inference_streams, 2),
    )


def search_next(
    start: float, step: float, max_runs: int, tried: Sequence[tuple[float, bool]]
) -> float | None:
    """The next Server target of one size's search, or None when it ends.

    `tried`: (target, VALID) of the runs so far. The first run is at `start` (the config's target);
    `step` is in queries/s. While no run has been VALID, one step below the lowest target tried;
    while none above the best VALID one has been INVALID, one step above it; once a VALID target
    and an INVALID one above it lie more than half a step apart, their midpoint. It ends after
    `max_runs` runs, when they lie half a step apart or closer, or when the next target would
    repeat one tried or fall to zero. Targets are whole hundreds. INVALID runs below the best VALID
    one (a noisy host) do not bound the search.
    """
    if not tried:
        return _quantize(start)
    if len(tried) >= max_runs:
        return None
    valid = [rate for rate, ok in tried if ok]
    if not valid:
        candidate = _quantize(min(rate for rate, _ in tried) - step)
    else:
        best = max(valid)
        above = [rate for rate, ok in tried if not ok and rate > best]
        if not above:
            candidate = _quantize(best + step)
        elif min(above) - best <= step / 2:
            return None
        else:
            candidate = _quantize((best + min(above)) / 2)
    if candidate <= 0 or candidate in {_quantize(rate) for rate, _ in tried}:
        return None
    return candidate


def search(
    start: float, step: float, max_runs: int, run: Callable[[float], bool]
) -> list[tuple[float, bool]]:
    """search_next driven to its end with `run` (target -> VALID): what the script's loop does."""
    tried: list[tuple[float, bool]] = []
    while (target := search_next(start, step, max_runs, tried)) is not None:
        tried.append((target, run(target)))
    return tried


def _quantize(rate: float) -> float:
    return float(round(rate / RATE_QUANTUM) * RATE_QUANTUM)


def _plan(args: argparse.Namespace) -> int:
    overrides = Overrides(
        precision=args.precision or None,
        loadgen_path=args.loadgen_path or None,
        offline_qps_per_gpu=float(args.offline_qps_per_gpu) if args.offline_qps_per_gpu else None,
        server_qps_per_gpu=float(args.server_qps_per_gpu) if args.server_qps_per_gpu else None,
        streams=int(args.streams) if args.streams else None,
    )
    host = detect_system()
    if args.gpu_name:  # the sim rehearsal: a host of these GPUs, as named by NVML
        gpu = GpuInfo(args.gpu_name, 0)
    elif host.gpus:
        gpu = host.gpus[0]
    else:
        raise HarnessError("scaling_plan: no GPU detected here: name one with --gpu_name")
    for gpus in (int(word) for word in args.gpus.split()):
        print(plan_size(gpus, size_system(gpu, gpus, host), overrides).line())
    return 0


def _next_server_rate(args: argparse.Namespace) -> int:
    tried = []
    for path in args.results:
        record = json.loads(Path(path).read_text())
        target = server_target(record)
        if target is None:
            raise HarnessError(f"{path}: no server_target_qps in its settings")
        tried.append((target, server_valid(record)))
    start = float(args.start)
    target = search_next(start, args.step * start, args.runs, tried)
    if target is not None:
        print(f"{target:.0f}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlperf_harness.benchmarks.scaling_plan")
    commands = parser.add_subparsers(dest="command", required=True)
    plan = commands.add_parser("plan", help="each size's settings, one line each")
    plan.add_argument("--gpus", required=True, help='the sizes, e.g. "1 2 4 8"')
    plan.add_argument("--gpu_name", default="", help="NVML's name of the GPUs (default: detected)")
    plan.add_argument("--precision", default="")
    plan.add_argument("--loadgen_path", default="")
    plan.add_argument("--offline_qps_per_gpu", default="")
    plan.add_argument("--server_qps_per_gpu", default="")
    plan.add_argument("--streams", default="")
    nxt = commands.add_parser("next_server_rate", help="the next Server target of one size")
    nxt.add_argument("--start", required=True, help="the first target (the size's config's)")
    nxt.add_argument("--step", type=float, default=0.04, help="the step, a fraction of --start")
    nxt.add_argument("--runs", type=int, default=3, help="at most this many runs in all")
    nxt.add_argument("results", nargs="*", help="result.json of the runs so far at this size")
    args = parser.parse_args(argv)
    try:
        return _plan(args) if args.command == "plan" else _next_server_rate(args)
    except HarnessError as error:
        print(f"scaling_plan: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
