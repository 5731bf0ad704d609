"""DLRM-v2 on CUDA GPUs through torch: a batch of samples (user groups) in, each sample's
(probability, label) pairs out, in as few kernels as the model allows.

- The loaded samples' packed pair rows (pair_store.py) are copied once to each GPU; a batch is
  then only its samples' (start, count): the pairs are found, gathered and unpacked on the GPU.
- The 26 tables are one stacked fp16 table (gpu_tables.py); every pooled lookup of a batch is one
  `embedding_bag` (sum) kernel over all its pairs' 214 indices, each moved to its table's rows; or,
  as the run's `--embedding` says (torch_plan.py, pooled_lookup.py), our Triton kernel over the
  same table (`kernel`) or over the tables as int8 rows with a scale per row (`kernel-int8`).
- The dense part (bottom MLP, three low-rank cross layers, top MLP: dense_part.py) runs in fp16,
  or with `--precision fp8` its Linear products in FP8 e4m3 (per-channel weight scales); with
  `--cross kernel` each cross layer's second product and update is one Triton kernel.
- Each batch size in pairs, rounded up to a bucket (BUCKET_GROWTH apart), is captured once as a
  CUDA graph (replicated tables): a batch is then one graph launch and one copy back. Where the
  capture fails, the runner says so once and runs the same steps without graphs.
- A GPU's runners replay their graphs on one stream of that GPU, each batch queued behind the
  others' (copy in, graph, copy out) without the host waiting for them: one batch's graph starts
  as the one before it ends, while its runner's thread hands the results back. On streams of their
  own the runners' graphs ran side by side and contended: three runners were 1.6% slower than two;
  on one stream three are as fast as two (one H200, 2026-11-30, fp16: 39,561 and 39,518 samples/s
  against 38,587 and 39,208 before).
- Tables sharded by rows across the host's GPUs (gpu_model.choose_placement): every shard pools
  the indices in its rows (the others weighted 0) and the partial sums are added on the runner's
  GPU; this path runs without graphs.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.dlrm_v2.dense_part import DenseLayers
from mlperf_harness.benchmarks.dlrm_v2.gpu_model import (
    GpuModelSource,
    choose_placement,
    load_source,
)
from mlperf_harness.benchmarks.dlrm_v2.gpu_tables import StackedTables
from mlperf_harness.benchmarks.dlrm_v2.pair_store import (
    DENSE_COLUMNS,
    LABEL_COLUMN,
    SPARSE_COLUMNS,
    WARMUP_PAIRS_PER_SAMPLE,
    PairGroupStore,
)
from mlperf_harness.benchmarks.dlrm_v2.torch_plan import TorchPlan
from mlperf_harness.engines.torch_aot.torch_host import gpu_count, import_torch
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

SMALLEST_BUCKET = 4096  # pairs
# A batch computes its whole bucket (the padding pairs too), so the buckets are close: 5% apart,
# 2.5% of padding on average. At 25% apart a batch of 256 real-size samples (about 69,400 pairs,
# give or take 2,400) took the 76,544 bucket: 10% of every batch's work was padding. The graphs
# of the buckets a run's batches take are captured as the samples load (likely_buckets).
BUCKET_GROWTH = 1.05


def pair_buckets(largest: int) -> list[int]:
    """Batch sizes in pairs that graphs are captured for, ascending, the last >= `largest`."""
    buckets = [SMALLEST_BUCKET]
    while buckets[-1] < largest:
        buckets.append(int(np.ceil(buckets[-1] * BUCKET_GROWTH / 256)) * 256)
    return buckets


LIKELY_SPREAD = 4.0  # standard deviations of a full batch's pair count above its mean


def likely_buckets(buckets: Sequence[int], counts: npt.NDArray[np.int64], batch: int) -> list[int]:
    """The buckets a runner's batches of up to `batch` of these samples (their pair `counts`)
    will take: every bucket up to the first that holds a full batch at its mean pair count plus
    LIKELY_SPREAD standard deviations (smaller batches take the smaller buckets: Server's)."""
    if len(counts) == 0:
        return []
    mean, spread = float(np.mean(counts)), float(np.std(counts))
    likely = batch * mean + LIKELY_SPREAD * np.sqrt(batch) * spread
    chosen = []
    for bucket in buckets:
        chosen.append(bucket)
        if bucket >= likely:
            break
    return chosen


def bucket_filling(bucket: int, previous: int, batch: int, max_pairs: int) -> npt.NDArray[np.int64]:
    """Pair counts of a batch of at most `batch` samples (each at most `max_pairs`) whose total
    falls in (`previous`, `bucket`]: what takes that bucket's graph."""
    samples = min(batch, max(1, -(-bucket // max_pairs)))
    counts = np.full(samples, min(max_pairs, bucket // samples), dtype=np.int64)
    total = int(counts.sum())
    if not previous < total <= bucket:
        raise HarnessError(f"no batch of {batch} samples of <= {max_pairs} pairs fills {bucket}")
    return counts


class _DeviceRows:
    """What one GPU's runners share: the loaded samples' packed rows, the lock of their CUDA graph
    captures and the stream their graphs replay on."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.rows: Any = None
        self.starts: npt.NDArray[np.int64] | None = None
        self.version = 0
        self._source: int | None = None
        self._lock = threading.Lock()
        self.capture_lock = threading.Lock()  # CUDA graph captures on this GPU, one at a time
        self._replay_stream: Any = None

    def replay_stream(self) -> Any:
        """The stream every runner of this GPU replays its graphs on (made at the first call)."""
        torch = import_torch()

        with self._lock:
            if self._replay_stream is None:
                self._replay_stream = torch.cuda.Stream(self.device)
            return self._replay_stream

    def update(self, store: PairGroupStore) -> None:
        torch = import_torch()

        rows, starts = store.loaded_rows()
        with self._lock:
            if self._source == id(rows) and self.rows is not None:
                return
            self.rows = None
            torch.cuda.empty_cache()
            data = rows if len(rows) else np.zeros((1, rows.shape[1]), dtype=np.int32)
            self.rows = torch.from_numpy(np.ascontiguousarray(data)).to(self.device)
            self.starts = starts.copy()
            self._source = id(rows)
            self.version += 1


class DlrmTorchRunner(Runner):
    name = "torch"

    def __init__(
        self,
        device_index: int,
        source: GpuModelSource,
        tables: StackedTables,
        rows: _DeviceRows,
        batch_size: int,
        max_pairs: int,
        precision: str,
        cross: str,
    ) -> None:
        self.device_index = device_index
        self._source = source
        self._tables = tables
        self._precision = precision
        self._cross = cross
        self._rows = rows
        self._batch = batch_size
        self._max_pairs = max_pairs
        self._buckets = pair_buckets(batch_size * max_pairs)
        self._graphs: dict[int, Any] = {}
        self._graphs_failed = False
        self.cuda_graphs = True  # False: every batch eager (torch_raw --profile's kernel table)
        self._rows_version = -1

    def activate(self) -> None:
        torch = import_torch()

        self._device = torch.device("cuda", self.device_index)
        torch.cuda.set_device(self._device)
        self._stream = torch.cuda.Stream(self._device)  # eager batches and captures
        self._replay_stream = self._rows.replay_stream()
        self._done = torch.cuda.Event()
        self._dense = self._dense_layers()
        self._bag_offsets = self._tables.layout.bag_offsets(self._buckets[-1], self._device)
        # Static buffers of every graph: the batch's (start, count) per sample slot (the last
        # slot pads to the bucket), copied in at once from pinned memory, and the responses (the
        # last row takes the padding's).
        self._host_slots = torch.zeros((2, self._batch + 1), dtype=torch.int64, pin_memory=True)
        self._slots = torch.zeros((2, self._batch + 1), dtype=torch.int64, device=self._device)
        self._starts, self._counts = self._slots[0], self._slots[1]
        self._out = torch.zeros(
            (self._batch * self._max_pairs + 1, 2), dtype=torch.float32, device=self._device
        )
        self._host_out = torch.empty(
            (self._batch * self._max_pairs, 2), dtype=torch.float32, pin_memory=True
        )
        self._pool = torch.cuda.graph_pool_handle()

    def _dense_layers(self) -> DenseLayers:
        return DenseLayers(
            self._source.dense,
            self._source.widths,
            self._device,
            self._precision,
            "dlrm-v2: torch",
            self._cross,
        )

    def samples_loaded(self, store: SampleStore) -> None:
        if not isinstance(store, PairGroupStore):
            raise HarnessError("DLRM-v2's runners read a PairGroupStore")
        self._rows.update(store)
        self._capture_likely_buckets(store)

    def _capture_likely_buckets(self, store: PairGroupStore) -> None:
        """The graphs of the buckets this runner's batches will take, captured now, while LoadGen
        loads the samples (untimed), not at each bucket's first batch in the timed run: the
        harness's warm-up comes before any sample is loaded, so without this the captures took
        about the first second of a 17 s Offline run on one H200 (2026-11-30, 94% of the
        runners' rate, which runs at their rate after it)."""
        starts = self._rows.starts
        if self._tables.sharded or not self.cuda_graphs or starts is None:
            return
        loaded = np.flatnonzero(starts >= 0)
        chosen = likely_buckets(self._buckets, store.pair_counts(loaded), self._batch)
        # The largest first: each smaller graph's tensors then fit in blocks of the runner's pool
        # that a larger one's capture freed. Smallest first, every graph needed blocks a little
        # larger than any freed: with the buckets 5% apart the pools grew to 88 GiB on one H200
        # (2026-11-30, --embedding torch: out of memory at load).
        steps = list(zip([0, *chosen], chosen, strict=False))
        for previous, bucket in reversed(steps):
            counts = bucket_filling(bucket, previous, self._batch, self._max_pairs)
            self._infer_counts(np.zeros(len(counts), dtype=np.int64), counts)

    def _gather(self, bucket: int) -> tuple[Any, Any, Any]:
        """(packed rows, sample slot, position in its sample) of the bucket's pairs, from the
        static (start, count) buffers."""
        torch = import_torch()

        device = self._device
        slots = self._batch + 1
        first = torch.cumsum(self._counts, 0) - self._counts
        sample = torch.repeat_interleave(
            torch.arange(slots, device=device), self._counts, output_size=bucket
        )
        position = torch.arange(bucket, device=device) - first[sample]
        loaded = self._rows.rows
        row = (self._starts[sample] + position).clamp_(0, loaded.shape[0] - 1)
        return loaded.index_select(0, row), sample, position

    def _compute(self, bucket: int) -> None:
        """The whole batch, from the static (start, count) buffers into the static responses."""
        torch = import_torch()

        rows, sample, position = self._gather(bucket)
        dense = rows[:, DENSE_COLUMNS].contiguous().view(torch.float32)
        labels = rows[:, LABEL_COLUMN].to(torch.float32)
        x0 = self._dense.interaction(rows.shape[0], self._device)  # pooled rows summed into it
        sparse = rows[:, SPARSE_COLUMNS]
        self._tables.pooled(sparse, self._bag_offsets, self._device, self._dense.pooled_columns(x0))
        probability = self._dense.probability_from(dense, x0)
        dump = self._batch * self._max_pairs
        flat = torch.where(sample < self._batch, sample * self._max_pairs + position, dump)
        self._out.zero_()
        self._out.index_copy_(0, flat, torch.stack([probability, labels], dim=1))

    def _captured(self, bucket: int) -> Any:
        """The bucket's graph, if captured for the rows loaded now."""
        if self._rows.version != self._rows_version:
            self._graphs.clear()  # the loaded rows moved: graphs read the old tensor
            self._rows_version = self._rows.version
        return self._graphs.get(bucket)

    def _run_bucket(self, bucket: int) -> None:
        """The bucket eager, or captured (then replayed), on the current stream: the runner's."""
        torch = import_torch()

        if self._tables.sharded or self._graphs_failed or not self.cuda_graphs:
            self._compute(bucket)
            return
        graph = self._captured(bucket)
        if graph is None:
            self._compute(bucket)  # a warm-up outside the capture allocates and picks kernels
            self._stream.synchronize()
            try:
                graph = torch.cuda.CUDAGraph()
                # One capture at a time per GPU; the other runners' threads go on meanwhile (their
                # calls do not touch the capturing stream: thread-local capture mode).
                with (
                    self._rows.capture_lock,
                    torch.cuda.graph(
                        graph,
                        pool=self._pool,
                        stream=self._stream,
                        capture_error_mode="thread_local",
                    ),
                ):
                    self._compute(bucket)
            except RuntimeError as error:
                self._graphs_failed = True
                first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
                print(f"dlrm-v2: torch: no CUDA graphs ({first}); running without", file=sys.stderr)
                torch.cuda.synchronize(self._device)
                self._compute(bucket)
                return
            self._graphs[bucket] = graph
        graph.replay()

    def _bucket(self, counts: npt.NDArray[np.int64]) -> int:
        """The bucket a batch of samples of these pair counts takes."""
        if len(counts) > self._batch:
            raise HarnessError(
                f"a batch of {len(counts)} samples; this runner was made for {self._batch}"
            )
        total = int(counts.sum())
        bucket = next((b for b in self._buckets if b >= total), None)
        if bucket is None:
            raise HarnessError(f"a batch of {total} pairs is larger than the largest bucket")
        return bucket

    def _fill_slots(
        self, starts: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], bucket: int
    ) -> None:
        """The batch's (start, count) per sample slot into the static buffers (the last slot pads
        to the bucket), queued on the current stream. The pinned copy is free again once the
        runner's previous batch has ended (each batch waits for its own end)."""
        n = len(counts)
        host = self._host_slots.numpy()
        host.fill(0)
        host[0, :n] = starts
        host[1, :n] = counts
        host[1, -1] = bucket - int(counts.sum())
        self._slots.copy_(self._host_slots, non_blocking=True)

    def batch_indices(self, store: SampleStore, indices: Sequence[int]) -> Any:
        """The int32 [pairs, 214] indices a batch of these samples pools (each table's own rows,
        its bucket's padding pairs included), on this runner's GPU: what torch_raw's
        --pooling_ab times the ways of pooling on (pooling_ab.py)."""
        torch = import_torch()

        if not isinstance(store, PairGroupStore) or self._rows.starts is None:
            raise HarnessError("DLRM-v2's runners read a PairGroupStore, loaded")
        index = np.asarray(indices, dtype=np.int64)
        counts = store.pair_counts(index)
        bucket = self._bucket(counts)
        with torch.cuda.device(self._device), torch.cuda.stream(self._stream):
            self._fill_slots(self._rows.starts[index], counts, bucket)
            rows, _, _ = self._gather(bucket)
            sparse = rows[:, SPARSE_COLUMNS]
        self._stream.synchronize()
        return sparse

    @property
    def source(self) -> GpuModelSource:
        return self._source

    @property
    def device(self) -> Any:
        """The torch device this runner runs on (after activate)."""
        return self._device

    @property
    def tables(self) -> StackedTables:
        return self._tables

    @property
    def precision(self) -> str:
        """The dense part's: fp16 or fp8."""
        return self._precision

    @property
    def cross(self) -> str:
        """How the cross layers' update is done: torch or kernel."""
        return self._cross

    def use(self, tables: StackedTables, precision: str, cross: str | None = None) -> None:
        """Run from now on with these tables (another way of pooling), this dense precision and
        this way of doing the cross layers' update (the runner's when None): torch_raw --grid's
        and --cross's variants, one process, the tables made once. After activate."""
        torch = import_torch()

        cross = cross or self._cross
        with torch.cuda.device(self._device):
            self._tables = tables
            if (precision, cross) != (self._precision, self._cross):
                self._precision, self._cross = precision, cross
                self._dense = self._dense_layers()
            self._graphs.clear()  # they hold the old tables and layers
            self._graphs_failed = False  # a capture that failed failed for the old ones

    def _infer_counts(
        self, starts: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]:
        torch = import_torch()

        n = len(counts)
        bucket = self._bucket(counts)
        graph = self._captured(bucket) if self.cuda_graphs and not self._graphs_failed else None
        # A captured bucket queues on the GPU's replay stream (behind the other runners' batches);
        # an eager batch or a capture runs on the runner's own stream. This worker thread's current
        # device and stream (each GPU's runners run on threads of their own).
        stream = self._replay_stream if graph is not None else self._stream
        used = n * self._max_pairs
        with torch.cuda.device(self._device), torch.cuda.stream(stream):
            self._fill_slots(starts, counts, bucket)
            if graph is not None:
                graph.replay()
            else:
                self._run_bucket(bucket)
            self._host_out[:used].copy_(self._out[:used], non_blocking=True)
            self._done.record(stream)
        self._done.synchronize()  # this batch's end only, not the batches queued behind it
        result: npt.NDArray[np.float32] = self._host_out[:used].numpy().reshape(n, -1)
        return result

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.float32]:
        if not isinstance(store, PairGroupStore):
            raise HarnessError("DLRM-v2's runners read a PairGroupStore")
        index = np.asarray(indices, dtype=np.int64)
        starts = self._rows.starts
        if starts is None or np.any(starts[index] < 0):
            raise HarnessError("LoadGen asked for a sample that was never loaded")
        return self._infer_counts(starts[index], store.pair_counts(index))

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.float32]:
        """The warm-up's call: the first loaded pairs, as many as `batch` holds (rows loaded)."""
        if self._rows.rows is None:
            return np.zeros((0, 2), dtype=np.float32)
        samples = max(1, min(self._batch, len(batch) // WARMUP_PAIRS_PER_SAMPLE))
        counts = np.full(samples, min(WARMUP_PAIRS_PER_SAMPLE, self._max_pairs), dtype=np.int64)
        return self._infer_counts(np.zeros(samples, dtype=np.int64), counts)

    def deactivate(self) -> None:
        self._graphs.clear()


def torch_group_runners(
    options: BackendOptions, *, max_pairs: int, plan: TorchPlan
) -> list[Runner]:
    """One runner per GPU and stream; tables per GPU (replicated) or across them (sharded)."""
    torch = import_torch()

    if options.model_path is None:
        raise HarnessError("the torch backend needs a DLRM-v2 model")
    gpus = gpu_count()
    source = load_source(options.model_path)
    memory = [torch.cuda.get_device_properties(i).total_memory for i in range(gpus)]
    row_format = "int8" if plan.int8_rows else "fp16"
    table_bytes = source.table_bytes(int8=plan.int8_rows)
    chosen, why = choose_placement(plan.placement, table_bytes, memory)
    print(
        f"dlrm-v2: torch: {source.total_rows} table rows ({table_bytes / 2**30:.1f} GiB {row_format}) "
        f"{chosen} over {gpus} GPU(s) ({why}); pooled by {plan.embedding} (--embedding), dense "
        f"part {plan.precision} (--precision), cross layers' update by {plan.cross} (--cross)",
        file=sys.stderr,
    )
    devices = [torch.device("cuda", i) for i in range(gpus)]
    shared = StackedTables(source, devices, plan.embedding) if chosen == "sharded" else None
    runners: list[Runner] = []
    batch = options.batch_size or 1
    for index, device in enumerate(devices):
        tables = shared or StackedTables(source, [device], plan.embedding)
        rows = _DeviceRows(device)
        for _ in range(options.gpu_inference_streams or 1):
            runners.append(
                DlrmTorchRunner(
                    index, source, tables, rows, batch, max_pairs, plan.precision, plan.cross
                )
            )
    return runners
