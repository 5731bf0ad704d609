"""SDXL's torch engine alone on a GPU, for the device script's table (benchmarks/sdxl/device/
gpu_scenarios.sh): SDXL's real size with seeded random weights (gpu_pipeline.py), seeded token rows;
Offline-like throughput (batches of --batch_size back to back) and one sample's latency. Prints one
JSON line. Written for the lent GPU hosts; not run in this workplace (no GPU here)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence

import numpy as np

from mlperf_harness.benchmarks.sdxl.gpu_pipeline import GpuOptions, TorchSdxlEngine
from mlperf_harness.benchmarks.sdxl.pipeline import PipelineInputs
from mlperf_harness.benchmarks.sdxl.unet_fp8 import FP16, check_precision
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="gpu_timing", description=__doc__)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--no_cuda_graphs", action="store_true")
    parser.add_argument("--vae_fp16", action="store_true")
    parser.add_argument("--precision", default=FP16, help="the UNet's: fp16 or fp8 (unet_fp8.py)")

    def run() -> int:
        import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        rng = np.random.default_rng(0)
        rows = rng.integers(1, 49000, (args.batch_size, 2, 77)).astype(np.int64)
        rows[:, :, 20] = 49407  # an end token per row, as a tokenizer's rows hold
        negative = rng.integers(1, 49000, (2, 77)).astype(np.int64)
        latents = rng.standard_normal((1, 4, 128, 128), dtype=np.float32)
        options = GpuOptions(
            use_cuda_graphs=not args.no_cuda_graphs,
            vae_fp16=args.vae_fp16,
            precision=check_precision(args.precision),
        )
        engine = TorchSdxlEngine(None, PipelineInputs(latents, negative), options)
        started = time.perf_counter()
        engine.load()
        load_s = time.perf_counter() - started
        engine.generate(rows)  # warm-up and graph capture at this batch size
        engine.generate(rows[:1])
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(args.batches):
            engine.generate(rows)
        torch.cuda.synchronize()
        offline_s = time.perf_counter() - started
        single = []
        for _ in range(5):
            started = time.perf_counter()
            engine.generate(rows[:1])
            single.append(time.perf_counter() - started)
        record = {
            "gpu": torch.cuda.get_device_name(0),
            "batch_size": args.batch_size,
            "precision": engine.models.precision,
            "fp8_layers": engine.models.fp8_layers,
            "fp8_scaled_mm": engine.models.fp8_scaled_mm,
            "cuda_graphs": not args.no_cuda_graphs,
            "load_s": round(load_s, 1),
            "offline_samples_per_s": round(args.batch_size * args.batches / offline_s, 3),
            "single_sample_ms_p50": round(float(np.median(single)) * 1e3, 1),
            "single_sample_ms_min": round(min(single) * 1e3, 1),
            "origin": engine.models.origin,
        }
        print(json.dumps(record))
        return 0

    return run_entry_point("gpu_timing", run)


if __name__ == "__main__":
    sys.exit(main())
