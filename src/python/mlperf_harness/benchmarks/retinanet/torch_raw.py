"""The raw speed of RetinaNet's torch engine outside the harness, and the GPU postprocessing's share
of it: what docs/performance.md holds the harness to. Takes the run targets' flags (`--backend torch
--precision fp16 --start_from_device ...`), so runners, engine and samples are the harness run's.

  throughput -- one thread per runner, each taking the next batch of the loaded samples;
  graph      -- the whole engine's CUDA graph replayed back to back (CUDA events);
  postprocess -- the postprocessing alone (engines/torch_retinanet/postprocess.py, the run's NMS
                way, compiled as the fp16 engine compiles it or eager as the fp8 engine runs it,
                in a CUDA graph of its own) on head
                outputs of the engine's batch: its share is its time over the whole engine's
                (postprocess_ab.py compares the ways, eager and compiled). Until 2026-11-29 this
                timed the eager postprocessing, three times the compiled one with the rounds way.
  `--cudnn_benchmark` lets cuDNN time its algorithms for each convolution as the engines load
  (the harness takes its heuristics' choice): the A/B of what conv_epilogue_ab.py found.
  profile    -- with `--profile N`: N replays of that graph under torch's profiler, every kernel's
                GPU ms a batch, summed by kind (convolutions and GEMMs, Inductor's fusions, copies,
                the rest: engines/kernel_profile.py), and the costliest kernels.
Prints a table; `--out` writes raw.json in the shape benchmarks/gpu_table.py reads.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.backends.torch_cuda.runner import TorchRunner
from mlperf_harness.benchmarks.raw_timing import loaded_runners, runner_throughput
from mlperf_harness.benchmarks.retinanet.anchors import anchors_per_level
from mlperf_harness.benchmarks.retinanet.benchmark import BENCHMARK
from mlperf_harness.cli.parsing import OneLineParser, positive_float, positive_int, run_entry_point
from mlperf_harness.engines import kernel_profile
from mlperf_harness.engines.gpu_timing import captured_ms
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.engines.torch_fp8.build import PRECISION as FP8
from mlperf_harness.engines.torch_retinanet.nms_ways import DEFAULT_NMS

GRAPH_REPLAYS = 20
PROFILE_ROWS = 15  # the costliest kernels printed (every kernel is kept for the sums by kind)
EVERY_KERNEL = 100_000


def postprocess_ms(batch: int, classes: int, nms: str, compiled: bool = True) -> float:
    """Milliseconds per replay of the postprocessing alone (NMS way `nms`), compiled as in the
    fp16 engine or eager as in the fp8 one (torch_retinanet/build.py), on random fp16 head
    outputs."""
    torch = import_torch()
    from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess

    module = GpuPostprocess(classes, nms=nms).cuda().eval()
    head = torch.randn((batch, sum(anchors_per_level()), 4 + classes), device="cuda").half()
    timed = torch.compile(module, fullgraph=True) if compiled else module
    return captured_ms(torch, lambda: timed(head), GRAPH_REPLAYS)


def graph_profile(runner: TorchRunner, replays: int) -> dict[str, Any]:
    """`replays` of the runner's largest CUDA graph under torch's profiler (kernel_profile.profiled:
    its kernels, and the replay's time on CUDA events to check their sum against), with the GPU
    ms a batch by kind of kernel."""
    torch = import_torch()
    graph = runner.largest_graph()
    with torch.cuda.device(runner.device_index):
        record = kernel_profile.profiled(
            torch, graph.replay, calls=replays, top=EVERY_KERNEL, label_prefix="retinanet/"
        )
    record["replays"] = replays
    record["kinds_ms_per_batch"] = kernel_profile.kernel_kinds(record["top"])
    record["top"] = record["top"][:PROFILE_ROWS]
    return record


def format_profile(profile: dict[str, Any], batch: int) -> str:
    kinds = ", ".join(f"{kind} {ms:.2f}" for kind, ms in profile["kinds_ms_per_batch"].items())
    return "\n".join(
        [
            f"profile, the engine's graph replayed {profile['replays']} times: kernels "
            f"{profile['kernel_ms_per_step']:.2f} ms a batch of {batch} (the replay on CUDA events "
            f"{profile['event_ms_per_step']:.2f} ms)",
            f"by kind, ms a batch: {kinds}",
            "the costliest kernels (ms a batch, calls a batch, name):",
            *kernel_profile.kernel_lines(profile["top"]),
        ]
    )


def measure(
    seconds: float,
    classes: int,
    run_flags: Sequence[str],
    profile_replays: int = 0,
    cudnn_benchmark: bool = False,
) -> dict[str, Any]:
    if cudnn_benchmark:  # before the engines load: their warm-up runs then time the algorithms
        import_torch().backends.cudnn.benchmark = True
    with loaded_runners(BENCHMARK, run_flags, "retinanet.torch_raw") as loaded:
        runners = [r for r in loaded.runners if isinstance(r, TorchRunner)]
        first = runners[0]
        batch = first.io.batch_size
        graph_ms = first.graph_milliseconds(GRAPH_REPLAYS)
        nms = loaded.plan.settings.settings.nms or DEFAULT_NMS
        precision = loaded.plan.settings.settings.precision
        # The fp8 engine runs its postprocessing eager (torch_retinanet/build.py): timed so.
        compiled = precision != FP8
        post_ms = postprocess_ms(batch, classes, nms, compiled)
        profile = {"profile": graph_profile(first, profile_replays)} if profile_replays else {}
        return profile | {
            "samples": len(loaded.indices),
            "cudnn_benchmark": cudnn_benchmark,
            "runners": len(runners),
            "cuda_graphs": all(r.uses_cuda_graph for r in runners),
            "engines": [
                {
                    "batch_size": batch,
                    "precision": precision,
                    **runner_throughput(runners, loaded.store, loaded.indices, batch, seconds),
                }
            ],
            "graph": {"batch": batch, "ms": graph_ms, "samples_per_second": batch * 1e3 / graph_ms},
            "postprocess": {
                "ms": post_ms,
                "share": post_ms / graph_ms,
                "nms": nms,
                "compiled": compiled,
            },
        }


def format_record(record: dict[str, Any]) -> str:
    rate, graph, post = record["engines"][0], record["graph"], record["postprocess"]
    return "\n".join(
        [
            f"{record['samples']} images; {record['runners']} runners, CUDA graphs "
            f"{'on' if record['cuda_graphs'] else 'OFF'}"
            + (
                ", cuDNN's algorithms timed (cudnn.benchmark)"
                if record.get("cudnn_benchmark")
                else ""
            ),
            f"raw, runners driven directly: {rate['samples_per_second']:,.1f} images/s",
            f"engine graph alone: {graph['ms']:.2f} ms per batch of {graph['batch']} "
            f"({graph['samples_per_second']:,.1f} images/s)",
            f"postprocessing alone ({'compiled' if post.get('compiled', True) else 'eager'}, "
            f"{post.get('nms', 'scan')} NMS): {post['ms']:.2f} ms per batch ({post['share']:.1%} "
            "of the engine)",
            *([format_profile(record["profile"], graph["batch"])] if "profile" in record else []),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="torch_raw", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--classes", type=int, default=264, help="the model's class count")
    parser.add_argument("--out", type=Path, default=None, help="write raw.json here")
    parser.add_argument(
        "--profile",
        type=positive_int,
        default=0,
        help="then replay the engine's graph this many times under torch's profiler: its kernels",
    )
    parser.add_argument(
        "--cudnn_benchmark",
        action="store_true",
        help="let cuDNN time its algorithms for each convolution (torch.backends.cudnn.benchmark) "
        "instead of taking its heuristics' choice, as the harness does",
    )

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        record = measure(args.seconds, args.classes, run_flags, args.profile, args.cudnn_benchmark)
        print(format_record(record))
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("torch_raw", run)


if __name__ == "__main__":
    raise SystemExit(main())
