"""RetinaNet's GPU postprocessing, one NMS way against the other (engines/torch_retinanet/nms_ways.py)
and compiled against eager: first their detections on the same head outputs, then each way's time a
batch, eager and compiled (torch.compile, as AOTInductor compiles it into the engine), each in a
CUDA graph of its own; beside them the part before NMS (top-k, decoding, the sort), the same in
both ways. No engine and no model: random fp16 head outputs of the real size.

Head outputs: `dense` (logits N(0, 1), as torch_raw times the postprocessing: every candidate above
the score threshold, the most NMS work) and `sparse` (logits N(-4, 1.5): some candidates below it,
as a trained model's). What each comparison must show (detections_compare.py's verdicts):

- the eager ways against each other: equal bit for bit (the same arithmetic before NMS, the host's
  rounding in both NMS's IoU, both greedy NMS exactly);
- each way compiled against itself eager, and the compiled ways against each other: equal up to
  rounding (compiled code rounds the decoding and the sigmoid differently: coordinates and scores a
  few ulps apart, and an NMS pair within 1e-4 of the IoU threshold may go either way; the verdict
  names each detection in one output only and why).
Eager ways that differ are not timed; any comparison that fails fails the command.

  python -m mlperf_harness.benchmarks.retinanet.postprocess_ab [--batch 8] [--classes 264] [--out F]

Prints a table and one summary line; `--out` writes the record (benchmarks/retinanet/device's
postprocess phase). Imports torch and triton: GPU hosts only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.atomic import write_json_atomic
from mlperf_harness.benchmarks.retinanet.anchors import anchors_per_level
from mlperf_harness.benchmarks.retinanet.detections import BOX_VALUES
from mlperf_harness.benchmarks.retinanet.detections_compare import (
    EQUAL,
    ROUNDING,
    candidate_rows,
    compare_detections,
)
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.engines.gpu_timing import captured_ms
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.engines.torch_retinanet.nms_ways import NMS_WAYS
from mlperf_harness.errors import HarnessError

GRAPH_REPLAYS = 20
SEEDS = 2  # heads of each kind compared
KINDS = {"dense": (0.0, 1.0), "sparse": (-4.0, 1.5)}  # logits' mean and deviation
COMPILED = "compiled"  # a compiled way's name: "<way> compiled"


def random_head(torch: Any, batch: int, classes: int, kind: str, seed: int) -> Any:
    """fp16 [batch, anchors, 4 + classes]: box deltas N(0, 0.2) (some boxes overlap after
    decoding), logits of `kind`."""
    mean, deviation = KINDS[kind]
    generator = torch.Generator(device="cuda").manual_seed(seed)
    shape = (batch, sum(anchors_per_level()), BOX_VALUES + classes)
    head = torch.randn(shape, device="cuda", generator=generator)
    head[..., :BOX_VALUES] *= 0.2
    head[..., BOX_VALUES:] = head[..., BOX_VALUES:] * deviation + mean
    return head.half()


def comparisons() -> list[tuple[str, str, str]]:
    """(first, second, the verdict the pair needs): the eager ways bit for bit, each compiled way
    against itself eager and the compiled ways against each other up to rounding."""
    first, *others = NMS_WAYS
    pairs = [(first, other, EQUAL) for other in others]
    pairs += [(f"{way} {COMPILED}", way, ROUNDING) for way in NMS_WAYS]
    pairs += [(f"{first} {COMPILED}", f"{other} {COMPILED}", ROUNDING) for other in others]
    return pairs


def passes(verdict: str, needed: str) -> bool:
    return verdict == EQUAL or (verdict == ROUNDING and needed == ROUNDING)


def compare(
    torch: Any, ways: dict[str, Any], heads: dict[str, Any], front: Any
) -> list[dict[str, Any]]:
    """Per head and pair of comparisons(): the verdict on their detections
    (detections_compare.compare_detections, with `front`'s candidates before NMS: an eager
    GpuPostprocess), and whether it is what the pair needs."""
    from mlperf_harness.benchmarks.retinanet.engine_detections import CONVERGED, COUNT

    checks = []
    with torch.no_grad():
        for label, head in heads.items():
            outputs = {name: fn(head).float().cpu().numpy() for name, fn in ways.items()}
            scores, boxes, labels = (t.cpu().numpy() for t in front.sorted_candidates(head))
            candidates = candidate_rows(boxes, scores, labels, front.image_size)
            for first, second, needed in comparisons():
                result = compare_detections(outputs[first], outputs[second], candidates)
                checks.append(
                    {
                        "head": label,
                        "pair": f"{first} / {second}",
                        "needed": needed,
                        "verdict": result.verdict,
                        "passes": passes(result.verdict, needed),
                        "line": result.line(),
                        "detections": int(outputs[first][:, 0, COUNT].sum()),
                        "settled": bool((outputs[first][:, 0, CONVERGED] == 1).all()),
                    }
                )
    return checks


def measure(batch: int, classes: int) -> dict[str, Any]:
    torch = import_torch()
    if not torch.cuda.is_available():
        raise HarnessError("postprocess_ab times the GPU postprocessing: no CUDA device here")
    from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess

    modules = {way: GpuPostprocess(classes, nms=way).cuda().eval() for way in NMS_WAYS}
    compiled = {way: torch.compile(m, fullgraph=True) for way, m in modules.items()}
    heads = {
        f"{kind} {seed}": random_head(torch, batch, classes, kind, seed)
        for kind in KINDS
        for seed in range(SEEDS)
    }
    record: dict[str, Any] = {
        "batch": batch,
        "classes": classes,
        "candidates": modules[NMS_WAYS[0]].candidates,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "checks": compare(
            torch,
            {**modules, **{f"{w} {COMPILED}": c for w, c in compiled.items()}},
            heads,
            modules[NMS_WAYS[0]],
        ),
    }
    eager = [check for check in record["checks"] if COMPILED not in check["pair"]]
    if not all(check["passes"] for check in eager):
        record["ways"] = {}  # not timed: the eager ways disagree
        return record
    timed = heads[f"dense {0}"]

    def ms(fn: Callable[[Any], Any]) -> float:  # a batch, in a CUDA graph of its own
        return captured_ms(torch, lambda: fn(timed), GRAPH_REPLAYS)

    record["ways"] = {
        way: {"eager_ms": ms(modules[way]), "compiled_ms": ms(compiled[way])} for way in NMS_WAYS
    }
    front = modules[NMS_WAYS[0]].sorted_candidates
    record["before_nms"] = {
        "eager_ms": ms(front),
        "compiled_ms": ms(torch.compile(front, fullgraph=True)),
    }
    return record


def format_record(record: dict[str, Any]) -> str:
    lines = [
        f"RetinaNet postprocessing A/B on {record['device']} (torch {record['torch']}): batch "
        f"{record['batch']}, {record['classes']} classes, {record['candidates']} candidates an image"
    ]
    for check in record["checks"]:
        failed = "" if check["passes"] else f"  <- FAILS: needs {check['needed']}"
        lines.append(f"  {check['pair']}, {check['head']} heads: {check['line']}{failed}")
    if not record["ways"]:
        lines.append("not timed: the eager ways' detections differ")
        return "\n".join(lines)
    lines.append(f"  {'NMS way':<8} {'eager ms':>9} {'compiled ms':>12}   (a batch, CUDA graph)")
    for way, times in record["ways"].items():
        lines.append(f"  {way:<8} {times['eager_ms']:>9.3f} {times['compiled_ms']:>12.3f}")
    front = record["before_nms"]
    lines.append(
        f"  {'top-k..':<8} {front['eager_ms']:>9.3f} {front['compiled_ms']:>12.3f}"
        "   (before NMS: top-k, decoding, sort; in both)"
    )
    return "\n".join(lines)


def summary(record: dict[str, Any]) -> str:
    """One line: each way's compiled ms a batch and how many comparisons passed, and how."""
    checks = record["checks"]
    passed = sum(check["passes"] for check in checks)
    exact = sum(check["verdict"] == EQUAL for check in checks)
    times = ", ".join(
        f"{way} {t['compiled_ms']:.2f} ms" for way, t in record.get("ways", {}).items()
    )
    return (
        f"postprocess A/B, batch {record['batch']} compiled: {times or 'not timed'}; "
        f"{passed} of {len(checks)} comparisons pass ({exact} bit for bit, "
        f"{passed - exact} equal up to rounding)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="postprocess_ab", description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=positive_int, default=8)
    parser.add_argument("--classes", type=positive_int, default=264)
    parser.add_argument("--out", type=Path, default=None, help="write the record here")

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        record = measure(args.batch, args.classes)
        print(format_record(record))
        print(summary(record))
        if args.out is not None:
            write_json_atomic(args.out, record)
        return 0 if all(check["passes"] for check in record["checks"]) else 1

    return run_entry_point("postprocess_ab", run)


if __name__ == "__main__":
    raise SystemExit(main())
