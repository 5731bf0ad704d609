"""The raw speed of DLRM-v2's torch runners outside the harness: what docs/performance.md holds the
harness to. Takes the run targets' flags (`--backend torch --model_path <real-size spec> ...`), so
the runners, tables and loaded samples are exactly those of the harness run it is compared with;
with no LoadGen and no harness threads, every runner on its own thread takes the next batch of one
shuffled pass over the loaded samples. Prints a line; `--out` writes raw.json in the shape
benchmarks/gpu_table.py reads. `--profile N`: then N batches on one runner run eagerly under
torch's profiler, and the GPU time per batch of the costliest kernels is printed (where the time
goes, graph launch aside). `--pooling_ab N`: then the ways of pooling the lookups (torch's
embedding_bag, our Triton kernel over fp16 and int8 rows) timed side by side over N batches on one
runner's tables (pooling_ab.py). `--grid`: then the runners timed in every way of pooling x dense
precision (`--embedding` torch, kernel, kernel-int8 x `--precision` fp16, fp8), `--seconds` each,
the tables made once (raw_grid.py). `--cross_ab N`: then the runners timed with the cross layers'
update by torch and by our Triton kernel (`--cross` torch, kernel; fp16), `--seconds` each, and one
cross layer's update alone on a batch's pairs in each way and launch form, N updates a round
(cross_ab.py)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.dlrm_v2.benchmark import BENCHMARK
from mlperf_harness.benchmarks.dlrm_v2.torch_runner import DlrmTorchRunner
from mlperf_harness.benchmarks.raw_timing import loaded_runners, runner_throughput
from mlperf_harness.cli.parsing import (
    OneLineParser,
    positive_float,
    positive_int,
    run_entry_point,
)
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

KERNEL_ROWS = 12


def measure(
    seconds: float,
    run_flags: Sequence[str],
    profile_batches: int,
    pooling_batches: int = 0,
    grid: bool = False,
    cross_updates: int = 0,
) -> dict[str, Any]:
    with loaded_runners(BENCHMARK, run_flags, "dlrm-v2.torch_raw") as loaded:
        batch = loaded.plan.settings.settings.batch_size or 1
        engine = runner_throughput(loaded.runners, loaded.store, loaded.indices, batch, seconds)
        record: dict[str, Any] = {
            "samples": len(loaded.indices),
            "runners": len(loaded.runners),
            "engines": [
                {
                    "batch_size": batch,
                    "precision": loaded.plan.settings.settings.precision,
                    **engine,
                }
            ],
        }
        runner = next((r for r in loaded.runners if isinstance(r, DlrmTorchRunner)), None)
        if (profile_batches or pooling_batches or grid or cross_updates) and runner is None:
            raise HarnessError(
                "--profile/--pooling_ab/--grid/--cross_ab: no DLRM-v2 torch runner in this run"
            )
        if profile_batches and runner is not None:
            picks = batch_picks(loaded.indices, batch, profile_batches)
            record["kernels"] = kernel_table(runner, loaded.store, picks)
        if pooling_batches and runner is not None:
            from mlperf_harness.benchmarks.dlrm_v2.pooling_ab import compare_pooling

            picks = batch_picks(loaded.indices, batch, pooling_batches)
            record["pooling"] = compare_pooling(runner, loaded.store, picks)
        if grid:
            from mlperf_harness.benchmarks.dlrm_v2.raw_grid import grid_rates

            record["grid"] = grid_rates(
                loaded.runners, loaded.store, loaded.indices, batch, seconds
            )
        if cross_updates and runner is not None:
            from mlperf_harness.benchmarks.dlrm_v2.cross_ab import compare_runner_updates
            from mlperf_harness.benchmarks.dlrm_v2.raw_grid import cross_rates

            pick = batch_picks(loaded.indices, batch, 1)[0]
            record["cross"] = {
                "runners": cross_rates(
                    loaded.runners, loaded.store, loaded.indices, batch, seconds
                ),
                "update": compare_runner_updates(runner, loaded.store, pick, cross_updates),
            }
        return record


def batch_picks(indices: Sequence[int], batch: int, batches: int) -> list[list[int]]:
    """`batches` batches of `batch` of the loaded samples, in their order (wrapping around)."""
    return [[indices[(b * batch + i) % len(indices)] for i in range(batch)] for b in range(batches)]


def kernel_table(
    runner: DlrmTorchRunner, store: SampleStore, picks: Sequence[Sequence[int]]
) -> dict[str, Any]:
    """Eager batches (`picks`: each batch's samples) under torch's profiler: the costliest
    kernels' GPU ms per batch, and the eager batch's wall time (against the graph's, in the
    throughput above)."""
    torch = import_torch()
    from torch.profiler import ProfilerActivity, profile  # type: ignore[import-not-found]  # pants: no-infer-dep

    batches = len(picks)
    runner.cuda_graphs = False
    try:
        runner.infer_samples(store, picks[0])  # warm: eager kernels chosen outside the profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for pick in picks:
                runner.infer_samples(store, pick)
            torch.cuda.synchronize()
    finally:
        runner.cuda_graphs = True
    events = [
        (event.key, event.device_time_total / 1e3 / batches)
        for event in prof.key_averages()
        if event.device_time_total > 0
    ]
    events.sort(key=lambda item: -item[1])
    return {
        "batches": batches,
        "gpu_ms_per_batch": sum(ms for _, ms in events),
        "top": [{"kernel": name[:90], "ms": ms} for name, ms in events[:KERNEL_ROWS]],
    }


def format_kernels(kernels: dict[str, Any]) -> str:
    lines = [
        f"eager, {kernels['batches']} batches profiled: {kernels['gpu_ms_per_batch']:.2f} GPU ms "
        "a batch in all kernels; the costliest:"
    ]
    lines += [f"  {row['ms']:8.3f} ms  {row['kernel']}" for row in kernels["top"]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="torch_raw", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--out", type=Path, default=None, help="write raw.json here")
    parser.add_argument(
        "--profile",
        type=positive_int,
        default=None,
        help="then profile this many eager batches on one runner: the costliest kernels",
    )
    parser.add_argument(
        "--pooling_ab",
        type=positive_int,
        default=None,
        help="then time the ways of pooling the lookups side by side over this many batches",
    )

    parser.add_argument(
        "--grid",
        action="store_true",
        help="then time the runners in every --embedding x --precision (fp16, fp8), --seconds each",
    )

    parser.add_argument(
        "--cross_ab",
        type=positive_int,
        default=None,
        help="then time the runners with --cross torch and kernel (fp16), --seconds each, and "
        "one cross layer's update in each way and launch form over this many updates",
    )

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        record = measure(
            args.seconds,
            run_flags,
            args.profile or 0,
            args.pooling_ab or 0,
            args.grid,
            args.cross_ab or 0,
        )
        engine = record["engines"][0]
        print(
            f"dlrm-v2 raw: {record['samples']} samples loaded, {record['runners']} runners, batch "
            f"{engine['batch_size']}: {engine['samples_per_second']:,.0f} samples/s, p50 "
            f"{engine['latency_ms']['p50']:.2f} ms a call"
        )
        if "kernels" in record:
            print(format_kernels(record["kernels"]))
        if "pooling" in record:
            from mlperf_harness.benchmarks.dlrm_v2.pooling_ab import format_pooling

            print(format_pooling(record["pooling"]))
        if "grid" in record:
            from mlperf_harness.benchmarks.dlrm_v2.raw_grid import format_grid

            print(format_grid(record["grid"]))
        if "cross" in record:
            from mlperf_harness.benchmarks.dlrm_v2.cross_ab import format_updates
            from mlperf_harness.benchmarks.dlrm_v2.raw_grid import format_grid

            print(format_grid(record["cross"]["runners"], first="cross"))
            print(format_updates(record["cross"]["update"]))
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("torch_raw", run)


if __name__ == "__main__":
    raise SystemExit(main())
