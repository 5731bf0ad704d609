"""What benchmarks/resnet50/device/scaling.sh runs at each size: the settings of that size's own
config (the known system of n of this host's GPUs: H100-SXM-80GBx4 on four of an eight-H100 host).
Server's search at each size from that config's target is the shared one (server_search.py,
device_lib.sh's server_search).

    python -m mlperf_harness.benchmarks.scaling_plan plan --gpus "1 2 4 8" [--gpu_name NAME] ...

`plan` prints one line per size: n, system, precision, LoadGen path, Offline batch, Offline
expected samples/s, Server batch, Server batching timeout (us), Server target queries/s, runners
per GPU. An override given (the script's PRECISION, LOADGEN_PATH, OFFLINE_QPS_PER_GPU,
SERVER_QPS_PER_GPU, STREAMS) wins at every size; what is not given comes from the size's config, and
a size whose system has no config of its own (the CPU defaults) is refused unless every value is
given.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlperf_harness.benchmarks.resnet50 import configs as resnet50_configs
from mlperf_harness.config.registry import ANY_SYSTEM, resolve
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario
from mlperf_harness.systems.detect import GpuInfo, SystemInfo, detect_system
from mlperf_harness.systems.known import match_known_system


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
    args = parser.parse_args(argv)
    try:
        return _plan(args)
    except HarnessError as error:
        print(f"scaling_plan: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
