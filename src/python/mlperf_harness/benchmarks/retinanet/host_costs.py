"""What the host spends on each RetinaNet image in the harness's Offline path, step by step, on this
machine: the steps a batch takes outside the GPU, each timed alone on real-size data.

  gather fp32   the store copies a batch of preprocessed images (3 x 800 x 800 float32, 7.7 MB
                each) into the runner's staging buffer (pinned on a GPU host): every batch when the
                images start in host memory (--no-start_from_device), never when they start on
                the GPU (the device script's runs: only 8 bytes a sample travel then)
  gather fp16   the same at half the bytes: what fp16 inputs would copy
  rows          engine_detections.engine_rows: a batch's detections (the GPU's [N, 301, 7] output,
                300 detections an image, the most) into LoadGen's sized responses
  copy in/out   (hosts with a CUDA GPU only) a batch's images host-to-device from pinned and from
                pageable memory, and its detections device-to-host

  python -m mlperf_harness.benchmarks.retinanet.host_costs [--batch 8] [--samples 64] [--repeats 20]

Prints one row a step: milliseconds a batch (the median of the repeats), microseconds an image,
and the bandwidth of the copies. No model and no engine; torch only for the GPU copies.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.benchmarks.retinanet.anchors import IMAGE_SIZE
from mlperf_harness.benchmarks.retinanet.detections import DETECTIONS_PER_IMAGE
from mlperf_harness.benchmarks.retinanet.engine_detections import (
    CONVERGED,
    COUNT,
    ROWS_PER_IMAGE,
    engine_rows,
)
from mlperf_harness.cli.parsing import OneLineParser, positive_int, run_entry_point
from mlperf_harness.harness.preloaded_store import PreloadedSampleStore

SHAPE = (3, IMAGE_SIZE, IMAGE_SIZE)


def median_ms(step: Callable[[], Any], repeats: int) -> float:
    """The median milliseconds of `step` over `repeats` calls, after one untimed call."""
    step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def images(count: int, dtype: Any, seed: int = 0) -> npt.NDArray[np.generic]:
    """`count` real-size preprocessed images' worth of values in [0, 1)."""
    rng = np.random.default_rng(seed)
    return rng.random((count, *SHAPE), dtype=np.float32).astype(dtype, copy=False)


def detections_output(batch: int, seed: int = 0) -> npt.NDArray[np.float32]:
    """A full engine output: every image settled with the most detections."""
    rng = np.random.default_rng(seed)
    out = np.zeros((batch, ROWS_PER_IMAGE, 7), np.float32)
    out[:, 1:, 1:] = rng.random((batch, DETECTIONS_PER_IMAGE, 6), dtype=np.float32)
    out[:, 0, COUNT], out[:, 0, CONVERGED] = DETECTIONS_PER_IMAGE, 1.0
    return out


def measure(batch: int, samples: int, repeats: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(1)
    indices = [int(i) for i in rng.choice(samples, batch, replace=False)]
    steps = []
    for dtype in (np.float32, np.float16):
        name = f"gather {np.dtype(dtype).name.replace('float', 'fp')}"
        ms, nbytes = gather_ms(images(samples, dtype), indices, repeats)
        steps.append(_step(name, ms, batch, nbytes))
    output = detections_output(batch)
    ms = median_ms(lambda: engine_rows(output, indices), repeats * 10)
    steps.append(_step("rows", ms, batch))
    steps.extend(gpu_copies(batch, repeats))
    return steps


def gather_ms(
    data: npt.NDArray[np.generic], indices: Sequence[int], repeats: int
) -> tuple[float, int]:
    """The store's gather of `indices` from `data` loaded (median ms) and the bytes it copies."""

    def read(wanted: Sequence[int]) -> npt.NDArray[np.generic]:
        return data[list(wanted)]

    store = PreloadedSampleStore(read, len(data), len(data))
    store.load(range(len(data)))
    staging = np.empty((len(indices), *data.shape[1:]), dtype=data.dtype)

    def gather() -> None:
        store.gather(indices, out=staging)

    return median_ms(gather, repeats), staging.nbytes


def gpu_copies(batch: int, repeats: int) -> list[dict[str, Any]]:
    """Host-to-device copies of a batch (pinned, pageable) and device-to-host of its detections,
    where torch sees a CUDA GPU; none elsewhere."""
    if importlib.util.find_spec("torch") is None:
        return []
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    if not torch.cuda.is_available():
        return []
    pinned = torch.from_numpy(images(batch, np.float32)).pin_memory()
    pageable = pinned.clone()
    device = torch.empty_like(pinned, device="cuda")
    out = torch.zeros((batch, ROWS_PER_IMAGE, 7), device="cuda")
    out_host = torch.empty_like(out, device="cpu").pin_memory()

    def copy(target: Any, source: Any) -> Callable[[], None]:
        def run() -> None:
            target.copy_(source, non_blocking=True)
            torch.cuda.synchronize()

        return run

    nbytes = pinned.numel() * pinned.element_size()
    return [
        _step("copy in, pinned", median_ms(copy(device, pinned), repeats), batch, nbytes),
        _step("copy in, pageable", median_ms(copy(device, pageable), repeats), batch, nbytes),
        _step("copy out", median_ms(copy(out_host, out), repeats), batch, out.numel() * 4),
    ]


def _step(name: str, ms: float, batch: int, nbytes: int | None = None) -> dict[str, Any]:
    return {
        "step": name,
        "batch_ms": ms,
        "image_us": ms * 1e3 / batch,
        "gb_per_s": None if nbytes is None else nbytes / (ms * 1e-3) / 1e9,
    }


def format_steps(steps: Sequence[dict[str, Any]], batch: int) -> str:
    lines = [f"{'step':<18} {f'ms a batch of {batch}':>16} {'us an image':>12} {'GB/s':>7}"]
    for step in steps:
        rate = "" if step["gb_per_s"] is None else f"{step['gb_per_s']:.1f}"
        lines.append(
            f"{step['step']:<18} {step['batch_ms']:>16.3f} {step['image_us']:>12.1f} {rate:>7}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="host_costs", description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=positive_int, default=8)
    parser.add_argument("--samples", type=positive_int, default=64, help="images loaded")
    parser.add_argument("--repeats", type=positive_int, default=20)

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        if args.batch > args.samples:
            parser.error(f"--batch {args.batch} is more than --samples {args.samples}")
        print(format_steps(measure(args.batch, args.samples, args.repeats), args.batch))
        return 0

    return run_entry_point("host_costs", run)


if __name__ == "__main__":
    raise SystemExit(main())
