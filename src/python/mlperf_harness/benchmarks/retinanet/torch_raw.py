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
from mlperf_harness.benchmarks.retinanet.postprocess_ab import captured_ms
from mlperf_harness.cli.parsing import OneLineParser, positive_float, run_entry_point
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.engines.torch_fp8.build import PRECISION as FP8
from mlperf_harness.engines.torch_retinanet.nms_ways import DEFAULT_NMS

GRAPH_REPLAYS = 20


def postprocess_ms(batch: int, classes: int, nms: str, compiled: bool = True) -> float:
    """Milliseconds per replay of the postprocessing alone (NMS way `nms`), compiled as in the
    fp16 engine or eager as in the fp8 one (torch_retinanet/build.py), on random fp16 head
    outputs."""
    torch = import_torch()
    from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess

    module = GpuPostprocess(classes, nms=nms).cuda().eval()
    head = torch.randn((batch, sum(anchors_per_level()), 4 + classes), device="cuda").half()
    return captured_ms(torch, torch.compile(module, fullgraph=True) if compiled else module, head)


def measure(seconds: float, classes: int, run_flags: Sequence[str]) -> dict[str, Any]:
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
        return {
            "samples": len(loaded.indices),
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
            f"{'on' if record['cuda_graphs'] else 'OFF'}",
            f"raw, runners driven directly: {rate['samples_per_second']:,.1f} images/s",
            f"engine graph alone: {graph['ms']:.2f} ms per batch of {graph['batch']} "
            f"({graph['samples_per_second']:,.1f} images/s)",
            f"postprocessing alone ({'compiled' if post.get('compiled', True) else 'eager'}, "
            f"{post.get('nms', 'scan')} NMS): {post['ms']:.2f} ms per batch ({post['share']:.1%} "
            "of the engine)",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="torch_raw", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--classes", type=int, default=264, help="the model's class count")
    parser.add_argument("--out", type=Path, default=None, help="write raw.json here")

    def run() -> int:
        args, run_flags = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        record = measure(args.seconds, args.classes, run_flags)
        print(format_record(record))
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0

    return run_entry_point("torch_raw", run)


if __name__ == "__main__":
    raise SystemExit(main())
