"""The torch runners timed in every way of pooling x dense precision (torch_raw --grid): the
choice of `--embedding` and `--precision` on one GPU call. One process: the runners, their loaded
samples and the fp16 tables are made once; each variant swaps the runners' tables (the same fp16
rows for `torch` and `kernel`, an int8 copy quantized from them for `kernel-int8`, made last: 30.4
GiB more at the real size) and dense layers (DlrmTorchRunner.use), warms them (a batch on each
runner: a variant that fails, a Triton compile say, is listed as failed) and times them as the raw
phase does (raw_timing's warm pass first, which captures the CUDA graphs of its buckets).
`cross_rates` does the same for the ways of doing the cross layers' update (`--cross` torch,
kernel: torch_raw --cross_ab), with the runners' own tables and fp16.

Imports torch: GPU hosts only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mlperf_harness.backends.base import Runner
from mlperf_harness.benchmarks.dlrm_v2.gpu_tables import StackedTables
from mlperf_harness.benchmarks.dlrm_v2.torch_plan import CROSS_KERNEL_PRECISION, TORCH_PRECISIONS
from mlperf_harness.benchmarks.raw_timing import runner_throughput
from mlperf_harness.config.fields import DLRM_CROSS_WAYS, DLRM_EMBEDDINGS
from mlperf_harness.errors import first_line
from mlperf_harness.harness.sample_store import SampleStore


def grid_rates(
    runners: Sequence[Runner],
    store: SampleStore,
    indices: Sequence[int],
    batch: int,
    seconds: float,
) -> dict[str, Any]:
    """{variants: [{embedding, precision, samples_per_second, latency_ms} or {..., failed}]}; the
    runners are left as they were made."""
    from mlperf_harness.benchmarks.dlrm_v2.torch_runner import DlrmTorchRunner

    torch_runners = [r for r in runners if isinstance(r, DlrmTorchRunner)]
    made = [(runner.tables, runner.precision) for runner in torch_runners]
    variants: list[dict[str, Any]] = []
    try:
        for embedding in DLRM_EMBEDDINGS:
            by_origin: dict[int, StackedTables] = {}
            for tables, _ in made:
                if id(tables) not in by_origin:
                    by_origin[id(tables)] = tables.pooled_by(embedding)
            for precision in TORCH_PRECISIONS:
                row: dict[str, Any] = {"embedding": embedding, "precision": precision}

                def switch(
                    runner: Any,
                    tables: StackedTables,
                    p: str = precision,
                    pooled_by: dict[int, StackedTables] = by_origin,
                ) -> None:
                    runner.use(pooled_by[id(tables)], p)

                variants.append(
                    _timed(
                        row, switch, made, torch_runners, runners, store, indices, batch, seconds
                    )
                )
            by_origin.clear()  # the int8 copy goes before the next variant's is made
    finally:
        for runner, (tables, precision) in zip(torch_runners, made, strict=True):
            runner.use(tables, precision)
    return {"batch_size": batch, "seconds": seconds, "variants": variants}


def cross_rates(
    runners: Sequence[Runner],
    store: SampleStore,
    indices: Sequence[int],
    batch: int,
    seconds: float,
) -> dict[str, Any]:
    """{variants: [{cross, precision, samples_per_second, latency_ms} or {..., failed}]}: the
    runners with their own tables, the dense part in fp16, the cross layers' update in each way;
    the runners are left as they were made."""
    from mlperf_harness.benchmarks.dlrm_v2.torch_runner import DlrmTorchRunner

    torch_runners = [r for r in runners if isinstance(r, DlrmTorchRunner)]
    made = [(runner.tables, runner.precision, runner.cross) for runner in torch_runners]
    precision = CROSS_KERNEL_PRECISION
    variants: list[dict[str, Any]] = []
    try:
        for cross in DLRM_CROSS_WAYS:
            row: dict[str, Any] = {"cross": cross, "precision": precision}

            def switch(runner: Any, tables: StackedTables, c: str = cross) -> None:
                runner.use(tables, precision, c)

            variants.append(
                _timed(row, switch, made, torch_runners, runners, store, indices, batch, seconds)
            )
    finally:
        for runner, (tables, made_precision, cross) in zip(torch_runners, made, strict=True):
            runner.use(tables, made_precision, cross)
    return {"batch_size": batch, "seconds": seconds, "variants": variants}


def _timed(
    row: dict[str, Any],
    switch: Callable[[Any, StackedTables], None],
    made: Sequence[tuple[Any, ...]],
    torch_runners: Sequence[Any],
    runners: Sequence[Runner],
    store: SampleStore,
    indices: Sequence[int],
    batch: int,
    seconds: float,
) -> dict[str, Any]:
    """`row` with the runners' rate once each is switched (given its runner and the tables it was
    made with) and warmed, or with why the switch or the first batch failed."""
    try:
        for runner, (tables, *_) in zip(torch_runners, made, strict=True):
            switch(runner, tables)
            runner.infer_samples(store, list(indices[:batch]))
    except Exception as error:  # Triton's compile and launch errors have no common type
        row["failed"] = first_line(error)
        return row
    row.update(runner_throughput(runners, store, indices, batch, seconds))
    return row


def format_grid(record: dict[str, Any], first: str = "embedding") -> str:
    """The table of grid_rates' record; of cross_rates' with `first` "cross"."""
    rows = record["variants"]
    base = next(
        (
            r["samples_per_second"]
            for r in rows
            if "failed" not in r and r[first] == "torch" and r["precision"] == "fp16"
        ),
        None,
    )
    lines = [
        f"runners by --{first} x --precision, batch {record['batch_size']}, "
        f"{record['seconds']:g} s each:",
        f"  {first:<12} {'precision':<9} {'samples/s':>10} {'vs torch fp16':>13} "
        f"{'p50 ms':>8} {'p99 ms':>8}",
    ]
    for row in rows:
        head = f"  {row[first]:<12} {row['precision']:<9}"
        if "failed" in row:
            lines.append(f"{head} failed: {row['failed']}")
            continue
        rate, latency = row["samples_per_second"], row["latency_ms"]
        ratio = f"{rate / base:.3f}x" if base else "-"
        lines.append(
            f"{head} {rate:>10,.0f} {ratio:>13} {latency['p50']:>8.2f} {latency['p99']:>8.2f}"
        )
    return "\n".join(lines)
