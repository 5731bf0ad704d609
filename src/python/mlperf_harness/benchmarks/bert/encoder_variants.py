"""Which way of running BERT's fp16 encoder is fastest on this GPU: each fusion of the encoder
(module.FUSIONS: what runs between the GEMMs) as a CUDA graph at one (bucket, batch) replayed back
to back, timed with CUDA events, on the real-size stand-in's engine; its logits against the first's.
(Two other ways were measured on an H200 and dropped, docs/performance.md: SDPA restricted to cuDNN's
attention, and each layer through torch.compile.)

`python -m mlperf_harness.benchmarks.bert.encoder_variants ENGINE [--seq 384 --batch 256]`: a
device-script step (benchmarks/bert/device/gpu_scenarios.sh variants); prints a table.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.engines.torch_bert.engine import read_engine
from mlperf_harness.engines.torch_bert.module import FUSIONS, SEQ_LENGTH, BertEncoder

REPLAYS = 10


def _time_variant(torch: Any, encoder: BertEncoder, seq: int, batch: int) -> tuple[float, Any]:
    rows = torch.zeros((batch, 3 * SEQ_LENGTH), dtype=torch.int32, device="cuda")
    # The same ids for every variant (a seeded generator), so their logits can be compared.
    ids = torch.randint(1000, 2000, (batch, SEQ_LENGTH), generator=torch.Generator().manual_seed(0))
    rows[:, :SEQ_LENGTH] = ids
    rows[:, SEQ_LENGTH : SEQ_LENGTH + seq - 10] = 1  # a little padding, as in a real bucket
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(stream):
        for _ in range(3):
            encoder(rows, seq)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            out = encoder(rows, seq)
        graph.replay()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPLAYS):
            graph.replay()
        end.record()
        end.synchronize()
    return float(start.elapsed_time(end)) / REPLAYS, out.clone()


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="encoder_variants", description=__doc__.splitlines()[0])
    parser.add_argument("engine", type=Path)
    parser.add_argument("--seq", type=positive_int, default=384)
    parser.add_argument("--batch", type=positive_int, default=256)

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        torch = import_torch()
        header, arrays = read_engine(args.engine)
        reference = None
        print(
            f"{'fusion':<15}{'ms':>9}{'samples/s':>11}{'max |diff|':>12}  (seq {args.seq}, batch {args.batch})"
        )
        for name in FUSIONS:
            began = time.perf_counter()
            try:
                encoder = BertEncoder(torch, header, arrays, torch.device("cuda", 0), name)
                ms, out = _time_variant(torch, encoder, args.seq, args.batch)
            except Exception as error:  # a variant this torch or GPU lacks: say so, go on
                print(
                    f"{name:<15}failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}"
                )
                continue
            diff = 0.0 if reference is None else float((out - reference).abs().max())
            reference = out if reference is None else reference
            print(
                f"{name:<15}{ms:>9.2f}{args.batch * 1e3 / ms:>11,.0f}{diff:>12.4f}"
                f"  (setup {time.perf_counter() - began:.0f} s)"
            )
            del encoder
            torch.cuda.empty_cache()
        return 0

    return run_entry_point("encoder_variants", run)


if __name__ == "__main__":
    raise SystemExit(main())
