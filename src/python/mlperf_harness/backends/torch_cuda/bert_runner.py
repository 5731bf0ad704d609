"""Run BERT's torch engine (engines/torch_bert) on CUDA GPUs, per sequence-length bucket.

One `BertRunner` serves one worker thread on one GPU; `bert_runners` makes `streams_per_gpu` of them
per GPU, sharing that GPU's copy of the weights (and of the samples, with start_from_device).

activate() builds the fp16 encoder from the engine's weights (once per GPU) and captures one CUDA
graph per (length bucket, batch size) of the ladder, all reading leading rows of one input buffer
and sharing one memory pool (the runner replays them one at a time on its own stream). A batch then:

1. finds each sample's real length (the ones of its mask; computed once per loaded sample with
   start_from_device) and plans it (`length_buckets.plan_batch`): sorted by length, split by bucket,
   chunks of at most the largest captured batch;
2. stages all its sample rows on the GPU in sorted order: with start_from_device one copy of the
   row list and, per chunk, an index_select from the GPU's copy of the samples; otherwise the
   sorted rows are gathered into pinned memory and copied over in one DMA;
3. per chunk, replays the (bucket, batch) graph and copies its [count, bucket, 2] logits into one
   pinned output area; one synchronize at the end of the batch;
4. answers [N, 384, 2] float32 in the batch's own order, zeros past each sample's bucket (which is
   past its real length: the scorer never reads there).

A batch of at least `varlen_min_tokens` real tokens (Offline's, and Server's larger ones) runs
without padding instead (`varlen_batches.py`): its real tokens concatenated, in calls of at most
VARLEN_CALL_TOKENS, each run eagerly (the shapes change with every batch) through the encoder's
`varlen` path; the token gather indices, positions and sequence bounds travel from pinned memory,
and the logits come back per token into the same [N, 384, 2] answer.

torch is imported in activate(): it is no dependency of the CPU build; GPU hosts provide it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.torch_cuda.length_buckets import (
    Plan,
    batch_ladder,
    check_buckets,
    plan_batch,
)
from mlperf_harness.backends.torch_cuda.runner import (
    DeviceSamples,
    bind_thread,
    spread_over_gpus,
)
from mlperf_harness.backends.torch_cuda.varlen_batches import (
    VARLEN_MIN_TOKENS,
    VarlenCall,
    flat_indices,
    plan_varlen,
    token_offsets,
)
from mlperf_harness.engines.gpu_timing import time_graph
from mlperf_harness.engines.torch_aot.torch_host import gpu_count, import_torch
from mlperf_harness.engines.torch_bert.engine import read_engine
from mlperf_harness.engines.torch_bert.module import SEQ_LENGTH, BertEncoder
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

ROW_WIDTH = 3 * SEQ_LENGTH  # token ids, mask, segment ids side by side
WARMUP_CALLS = 2  # cuBLAS and SDPA pick and load their kernels on the first calls of each shape
# The largest captured batch: a bucket's samples beyond it run in several chunks. 256 sequences of
# 384 tokens take about 1.5 GB of activations in fp16 (the FFN's [tokens, 4096] the largest).
MAX_GRAPH_BATCH = 256


def sample_lengths(rows: npt.NDArray[np.generic]) -> npt.NDArray[np.int64]:
    """Real lengths of packed sample rows: the ones of each row's mask."""
    lengths: npt.NDArray[np.int64] = np.asarray(
        rows[:, SEQ_LENGTH : 2 * SEQ_LENGTH], dtype=np.int64
    ).sum(axis=1)
    return lengths


class SharedEncoders:
    """One encoder per (GPU, engine file), shared by that GPU's runners: weights are read-only.
    Whether the GPU runs the encoder's varlen path is found once per GPU too, when its encoder is
    made: one small varlen call. Without FlashAttention's variable-length kernel (GPUs before
    Ampere) that GPU's runners keep every batch on the buckets, said once, instead of a run failing
    at its first large batch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encoders: dict[tuple[int, Path], tuple[BertEncoder, str | None]] = {}

    def get(self, torch: Any, device_index: int, engine: Path) -> tuple[BertEncoder, str | None]:
        """The encoder, and why its varlen path cannot run on this GPU (None: it can)."""
        with self._lock:
            key = (device_index, engine)
            if key not in self._encoders:
                header, arrays = read_engine(engine)
                encoder = BertEncoder(torch, header, arrays, torch.device("cuda", device_index))
                error = _varlen_error(torch, encoder)
                if error is not None:
                    print(
                        f"bert: GPU {device_index}: no variable-length attention ({error[:160]}); "
                        "every batch runs on the length buckets",
                        file=sys.stderr,
                    )
                self._encoders[key] = (encoder, error)
            return self._encoders[key]


def _varlen_error(torch: Any, encoder: BertEncoder) -> str | None:
    """The first line of what one small varlen call raises on the current GPU, or None."""
    try:
        with torch.no_grad():
            ids = torch.full((16,), 1000, dtype=torch.int32, device="cuda")
            positions = torch.arange(16, dtype=torch.int32, device="cuda")
            bounds = torch.tensor([0, 6, 16], dtype=torch.int32, device="cuda")
            encoder.varlen(ids, torch.zeros_like(ids), positions, bounds, 10)
        torch.cuda.synchronize()
    except RuntimeError as error:  # torch's errors from a missing kernel are RuntimeErrors
        return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return None


@dataclass
class _Graph:
    graph: Any  # None: run eagerly (capture failed)
    output: Any  # [graph_batch, seq, 2] float32, the graph's static output


class BertRunner(Runner):
    name = "torch"

    def __init__(
        self,
        engine: Path,
        *,
        buckets: Sequence[int],
        batch_size: int,
        device_index: int = 0,
        encoders: SharedEncoders | None = None,
        device_samples: DeviceSamples | None = None,
        cuda_graph: bool = True,
    ) -> None:
        self._engine = engine
        self.buckets = check_buckets(buckets, SEQ_LENGTH)
        if batch_size < 1:
            raise HarnessError(
                f"the BERT runner needs a batch size of at least 1, got {batch_size}"
            )
        self.batch_size = batch_size  # the harness's batches: staging buffers are sized for them
        self.ladder = batch_ladder(min(batch_size, MAX_GRAPH_BATCH))
        self.device_index = device_index
        self._encoders = encoders or SharedEncoders()
        self._device_samples = device_samples
        self._want_graph = cuda_graph
        # Batches of at least this many real tokens run varlen; None: every batch on the buckets.
        self.varlen_min_tokens: int | None = VARLEN_MIN_TOKENS
        self._lock = threading.Lock()
        self._torch: Any = None
        self._encoder: BertEncoder | None = None
        self._stream: Any = None
        self._graphs: dict[tuple[int, int], _Graph] = {}
        self._gpu_in: Any = None  # [largest batch, ROW_WIDTH] int32: every graph's input rows
        self._staged: dict[str, Any] = {}  # a batch's staging buffers (pinned host and GPU)
        self._row_lengths: npt.NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self.cuda_graph_error: str | None = None
        self.varlen_error: str | None = None  # why batches never run varlen on this GPU, if so

    @property
    def uses_cuda_graph(self) -> bool:
        return bool(self._graphs) and all(g.graph is not None for g in self._graphs.values())

    def activate(self) -> None:
        if not self._engine.is_file():
            raise HarnessError(f"torch BERT engine not found: {self._engine}")
        torch = import_torch()
        with torch.cuda.device(self.device_index):
            self._torch = torch
            self._encoder, self.varlen_error = self._encoders.get(
                torch, self.device_index, self._engine
            )
            if self.varlen_error is not None:
                self.varlen_min_tokens = None
            self._stream = torch.cuda.Stream()
            largest = self.ladder[-1]
            # Real-looking rows (random ids, full mask) keep warm-up on the kernels real ones use.
            rows = torch.zeros((largest, ROW_WIDTH), dtype=torch.int32, device="cuda")
            rows[:, :SEQ_LENGTH] = torch.randint(1000, 2000, (largest, SEQ_LENGTH))
            rows[:, SEQ_LENGTH : 2 * SEQ_LENGTH] = 1
            self._gpu_in = rows
            self._capture()
            self._allocate_staging(self.batch_size)

    def _allocate_staging(self, count: int) -> None:
        """Staging buffers for batches of `count` samples (a larger batch grows them)."""
        torch = self._torch
        self._staged = {
            "host_in": torch.empty((count, ROW_WIDTH), dtype=torch.int32, pin_memory=True),
            "gpu_sorted": torch.empty((count, ROW_WIDTH), dtype=torch.int32, device="cuda"),
            "host_rows": torch.empty(count, dtype=torch.int64, pin_memory=True),
            "gpu_rows": torch.empty(count, dtype=torch.int64, device="cuda"),
            "host_out": torch.empty(count * SEQ_LENGTH * 2, dtype=torch.float32, pin_memory=True),
            # varlen batches: per token its gather index (or, from host rows, its id and segment
            # id), its position; per sequence its first token (one more per call)
            "host_index": torch.empty(count * SEQ_LENGTH, dtype=torch.int64, pin_memory=True),
            "host_ids": torch.empty(count * SEQ_LENGTH, dtype=torch.int32, pin_memory=True),
            "host_segments": torch.empty(count * SEQ_LENGTH, dtype=torch.int32, pin_memory=True),
            "host_positions": torch.empty(count * SEQ_LENGTH, dtype=torch.int32, pin_memory=True),
            "host_cu": torch.empty(2 * count + 1, dtype=torch.int32, pin_memory=True),
        }

    def _capture(self) -> None:
        torch, stream, encoder = self._torch, self._stream, self._encoder
        assert encoder is not None
        stream.wait_stream(torch.cuda.current_stream())
        # The largest first (tokens a call): a smaller graph's tensors then fit in blocks of the
        # pool that a larger one's capture freed (DLRM-v2's runner: smallest first, its pools
        # grew past the GPU's memory).
        shapes = sorted(
            ((seq, batch) for seq in self.buckets for batch in self.ladder),
            key=lambda shape: shape[0] * shape[1],
            reverse=True,
        )
        with torch.no_grad(), torch.cuda.stream(stream):
            for seq, batch in shapes:
                for _ in range(WARMUP_CALLS):
                    output = encoder(self._gpu_in[:batch], seq)
                self._graphs[(seq, batch)] = _Graph(None, output)
        stream.synchronize()
        if not self._want_graph:
            return
        pool = torch.cuda.graph_pool_handle()
        try:
            with torch.no_grad():
                for seq, batch in shapes:  # the pool is sized by the first
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, pool=pool, stream=stream):
                        output = encoder(self._gpu_in[:batch], seq)
                    self._graphs[(seq, batch)] = _Graph(graph, output)
            stream.synchronize()
        except Exception as error:  # capture fails with RuntimeError or CUDA errors of any kind
            self.cuda_graph_error = f"{type(error).__name__}: {str(error).splitlines()[0]}"
            torch.cuda.synchronize()
            for key, entry in self._graphs.items():
                self._graphs[key] = _Graph(None, entry.output)

    def _staging(self, count: int) -> dict[str, Any]:
        """The staging buffers, grown first if a batch of `count` samples does not fit them."""
        if self._staged["host_rows"].shape[0] < count:
            self._allocate_staging(count)
        return self._staged

    # Batches ------------------------------------------------------------------------------------
    def samples_loaded(self, store: SampleStore) -> None:
        loaded = store.loaded_samples()
        self._row_lengths = (
            np.empty(0, dtype=np.int64) if loaded is None else sample_lengths(loaded[0])
        )
        if self._device_samples is None:
            return
        self._device_samples.update(self._torch, store)
        if loaded is not None and len(loaded[0]):
            # Warm the gather path and every graph size here, where LoadGen is not timing yet.
            first = int(loaded[1][loaded[1] >= 0][0])
            self._run_device_rows(np.full(self.batch_size, first, dtype=np.int64))

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        rows = np.asarray(batch).reshape(len(batch), -1)
        if rows.shape[1] != ROW_WIDTH:
            raise HarnessError(f"BERT samples are rows of {ROW_WIDTH} ids, got {rows.shape[1]}")
        return self._run_host_rows(rows.astype(np.int32, copy=False))

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        if self._device_samples is None:
            return self._run_host_rows(np.asarray(store.gather(indices), dtype=np.int32))
        return self._run_device_rows(self._device_samples.rows_of(store, indices))

    def _varlen(self, lengths: npt.NDArray[np.int64]) -> bool:
        return self.varlen_min_tokens is not None and int(lengths.sum()) >= self.varlen_min_tokens

    def _run_host_rows(self, rows: npt.NDArray[np.int32]) -> npt.NDArray[np.float32]:
        torch = self._torch
        lengths = sample_lengths(rows)
        if self._varlen(lengths):
            return self._run_varlen_host(rows, lengths)
        plan = plan_batch(lengths, self.buckets, self.ladder)
        with self._lock:
            bind_thread(self, torch, self.device_index, self._stream)
            count = len(rows)
            staged = self._staging(count)
            host, gpu = staged["host_in"][:count], staged["gpu_sorted"]
            np.take(rows, plan.order, axis=0, out=host.numpy())
            gpu[:count].copy_(host, non_blocking=True)

            def stage(start: int, n: int) -> None:
                self._gpu_in[:n].copy_(gpu[start : start + n])

            return self._run_plan(plan, stage)

    def _run_device_rows(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        torch, samples = self._torch, self._device_samples
        assert samples is not None
        lengths = self._row_lengths[rows]
        if self._varlen(lengths):
            return self._run_varlen_device(rows, lengths)
        plan = plan_batch(lengths, self.buckets, self.ladder)
        with self._lock:
            bind_thread(self, torch, self.device_index, self._stream)
            count = len(rows)
            staged = self._staging(count)
            host_rows, gpu_rows = staged["host_rows"][:count], staged["gpu_rows"]
            np.take(rows, plan.order, out=host_rows.numpy())
            gpu_rows[:count].copy_(host_rows, non_blocking=True)

            def stage(start: int, n: int) -> None:
                torch.index_select(
                    samples.data, 0, gpu_rows[start : start + n], out=self._gpu_in[:n]
                )

            return self._run_plan(plan, stage)

    def _run_plan(self, plan: Plan, stage: Any) -> npt.NDArray[np.float32]:
        """Run every chunk of `plan` (its rows staged by `stage(start, count)` into the graphs'
        input) on the current stream; one synchronize; the logits in the batch's order."""
        torch = self._torch
        host_out = self._staged["host_out"]  # sized for the batch by _staging
        offsets = []
        cursor = 0
        for chunk in plan.chunks:
            stage(chunk.start, chunk.count)
            entry = self._graphs[(chunk.seq, chunk.graph_batch)]
            if entry.graph is not None:
                entry.graph.replay()
                output = entry.output
            else:
                assert self._encoder is not None
                with torch.no_grad():
                    output = self._encoder(self._gpu_in[: chunk.graph_batch], chunk.seq)
            size = chunk.count * chunk.seq * 2
            host_out[cursor : cursor + size].view(chunk.count, chunk.seq, 2).copy_(
                output[: chunk.count], non_blocking=True
            )
            offsets.append(cursor)
            cursor += size
        self._stream.synchronize()
        flat = host_out.numpy()
        result = np.zeros((len(plan.order), SEQ_LENGTH, 2), dtype=np.float32)
        for chunk, offset in zip(plan.chunks, offsets, strict=True):
            logits = flat[offset : offset + chunk.count * chunk.seq * 2]
            positions = plan.order[chunk.start : chunk.start + chunk.count]
            result[positions, : chunk.seq] = logits.reshape(chunk.count, chunk.seq, 2)
        return result

    # Varlen batches -------------------------------------------------------------------------------
    def _run_varlen_host(
        self, rows: npt.NDArray[np.int32], lengths: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]:
        """A varlen batch from host rows: each call's ids and segment ids gathered on the host."""
        flat = rows.reshape(-1)
        positions = np.arange(len(rows), dtype=np.int64)

        def gather(call: VarlenCall, start: int, staged: dict[str, Any]) -> tuple[Any, Any]:
            index = flat_indices(positions, call, ROW_WIDTH)
            ids = staged["host_ids"][start : start + call.tokens]
            segments = staged["host_segments"][start : start + call.tokens]
            np.take(flat, index, out=ids.numpy())
            np.take(flat, index + 2 * SEQ_LENGTH, out=segments.numpy())
            return ids.to("cuda", non_blocking=True), segments.to("cuda", non_blocking=True)

        return self._run_varlen(lengths, gather)

    def _run_varlen_device(
        self, rows: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]:
        """A varlen batch from this GPU's copy of the samples: only the token indices travel."""
        samples = self._device_samples
        assert samples is not None

        def gather(call: VarlenCall, start: int, staged: dict[str, Any]) -> tuple[Any, Any]:
            host = staged["host_index"][start : start + call.tokens]
            host.numpy()[:] = flat_indices(rows, call, ROW_WIDTH)
            index = host.to("cuda", non_blocking=True)
            flat = samples.data.view(-1)
            return flat.index_select(0, index), flat.index_select(0, index + 2 * SEQ_LENGTH)

        return self._run_varlen(lengths, gather)

    def _run_varlen(self, lengths: npt.NDArray[np.int64], gather: Any) -> npt.NDArray[np.float32]:
        """Every varlen call of the batch on the runner's stream (`gather(call, first token,
        staging)` puts the call's ids and segment ids on the GPU), one synchronize, the logits
        scattered into the batch's [N, 384, 2] answer."""
        torch = self._torch
        calls = plan_varlen(lengths)
        with self._lock:
            bind_thread(self, torch, self.device_index, self._stream)
            staged = self._staging(len(lengths))
            host_out = staged["host_out"]
            token, sequence = 0, 0
            with torch.no_grad():
                for call in calls:
                    n = call.tokens
                    ids, segments = gather(call, token, staged)
                    positions = staged["host_positions"][token : token + n]
                    positions.numpy()[:] = token_offsets(call)
                    cu = staged["host_cu"][sequence : sequence + len(call.cu_seqlens)]
                    cu.numpy()[:] = call.cu_seqlens
                    assert self._encoder is not None
                    logits = self._encoder.varlen(
                        ids,
                        segments,
                        positions.to("cuda", non_blocking=True),
                        cu.to("cuda", non_blocking=True),
                        call.max_length,
                    )
                    host_out[2 * token : 2 * (token + n)].view(n, 2).copy_(
                        logits, non_blocking=True
                    )
                    token, sequence = token + n, sequence + len(call.cu_seqlens)
            self._stream.synchronize()
            result = np.zeros((len(lengths), SEQ_LENGTH, 2), dtype=np.float32)
            flat_result = result.reshape(-1, 2)
            logits_flat = host_out.numpy()
            batch_positions = np.arange(len(lengths), dtype=np.int64)
            token = 0
            for call in calls:
                n = call.tokens
                flat_result[flat_indices(batch_positions, call, SEQ_LENGTH)] = logits_flat[
                    2 * token : 2 * (token + n)
                ].reshape(n, 2)
                token += n
            return result

    def graph_milliseconds(self, seq: int, batch: int, replays: int) -> float:
        """The (seq, batch) graph replayed back to back on its current input, timed with CUDA
        events: milliseconds per replay (the engine alone, for torch_raw)."""
        torch, entry = self._torch, self._graphs[(seq, batch)]
        if entry.graph is None:
            raise HarnessError(f"no CUDA graph for {seq} tokens x {batch}: {self.cuda_graph_error}")
        with self._lock:
            return time_graph(torch, self._stream, entry.graph, replays)

    def deactivate(self) -> None:
        if self._stream is not None:
            self._stream.synchronize()
        self._graphs, self._staged = {}, {}
        self._gpu_in = self._stream = self._encoder = None


def bert_runners(
    engine: Path,
    *,
    buckets: Sequence[int],
    batch_size: int,
    streams_per_gpu: int,
    start_from_device: bool,
) -> list[Runner]:
    """`streams_per_gpu` runners for every GPU (spread_over_gpus), sharing each GPU's weights and
    samples."""
    encoders = SharedEncoders()
    samples = [DeviceSamples(gpu) if start_from_device else None for gpu in range(gpu_count())]
    return spread_over_gpus(
        streams_per_gpu,
        lambda gpu: BertRunner(
            engine,
            buckets=buckets,
            batch_size=batch_size,
            device_index=gpu,
            encoders=encoders,
            device_samples=samples[gpu],
        ),
    )
