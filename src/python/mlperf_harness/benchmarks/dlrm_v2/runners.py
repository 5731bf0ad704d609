"""DLRM-v2's runners: a batch of samples (user groups) in, each sample's (prediction, label) float32
pairs out, laid out as MLCommons' accuracy script reads them.

`GroupRunner` turns any pair runner (packed pair rows in, one click probability per pair out) into
a runner of the harness's samples: it gathers the batch's pairs from the PairGroupStore, runs them
as one model batch, and spreads the probabilities back over the samples, each response padded to
the widest sample (the harness logs only each sample's own pairs: PreparedRun.response_bytes).
`OnnxPairRunner` is the CPU pair runner: the ONNX model's two inputs fed from the packed rows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.backends.onnxruntime.session import cpu_session
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.dlrm_v2.pair_store import PairGroupStore, unpack_rows
from mlperf_harness.benchmarks.dlrm_v2.stand_in_model import DENSE_INPUT, OUTPUT_NAME, SPARSE_INPUT
from mlperf_harness.benchmarks.dlrm_v2.torch_plan import TorchPlan
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

RESPONSE_DTYPE = np.float32


def spread_over_samples(
    probabilities: npt.NDArray[np.float32],
    labels: npt.NDArray[np.float32],
    counts: npt.NDArray[np.int64],
    max_pairs: int,
) -> npt.NDArray[np.float32]:
    """[samples, max_pairs * 2]: row i holds sample i's (prediction, label) pairs, then zeros."""
    out = np.zeros((len(counts), max_pairs, 2), dtype=RESPONSE_DTYPE)
    sample = np.repeat(np.arange(len(counts)), counts)
    position = np.arange(len(sample)) - np.repeat(np.cumsum(counts) - counts, counts)
    out[sample, position, 0] = probabilities
    out[sample, position, 1] = labels
    return out.reshape(len(counts), max_pairs * 2)


class OnnxPairRunner(Runner):
    name = "onnxruntime"

    def __init__(self, model_path: Path, intra_op_threads: int | None = None) -> None:
        self._model_path = model_path
        self._threads = intra_op_threads
        self._session: Any = None

    def activate(self) -> None:
        self._session = cpu_session(self._model_path, self._threads)

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.float32]:
        """Packed pair rows -> one click probability per pair."""
        dense, sparse, _ = unpack_rows(np.asarray(batch, dtype=np.int32))
        (probability,) = self._session.run(
            [OUTPUT_NAME], {DENSE_INPUT: dense, SPARSE_INPUT: sparse}
        )
        result: npt.NDArray[np.float32] = np.asarray(probability, dtype=np.float32)
        return result

    def deactivate(self) -> None:
        self._session = None


class GroupRunner(Runner):
    def __init__(self, pairs: Runner, max_pairs: int) -> None:
        self._pairs = pairs
        self._max_pairs = max_pairs
        self.name = pairs.name
        self.device_index = pairs.device_index

    def activate(self) -> None:
        self._pairs.activate()

    def samples_loaded(self, store: SampleStore) -> None:
        self._pairs.samples_loaded(store)

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.float32]:
        """Packed pair rows -> [pairs, 2] (prediction, label): the warm-up's call."""
        _, _, labels = unpack_rows(np.asarray(batch, dtype=np.int32))
        pairs = np.stack([self._pairs.infer(batch), labels], axis=1)
        result: npt.NDArray[np.float32] = pairs.astype(RESPONSE_DTYPE)
        return result

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.float32]:
        if not isinstance(store, PairGroupStore):
            raise HarnessError("DLRM-v2's runners read a PairGroupStore")
        rows = store.gather(indices)
        probabilities = np.asarray(self._pairs.infer(rows), dtype=np.float32).reshape(-1)
        _, _, labels = unpack_rows(rows)
        return spread_over_samples(
            probabilities, labels, store.pair_counts(indices), self._max_pairs
        )

    def deactivate(self) -> None:
        self._pairs.deactivate()


class NullGroupRunner(NullRunner):
    """The null backend for DLRM-v2: an empty response per sample, nothing gathered."""

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.uint8]:
        return np.empty((len(indices), 0), dtype=np.uint8)


def dlrm_runners(
    backend: str, options: BackendOptions, *, max_pairs: int, plan: TorchPlan | None = None
) -> list[Runner]:
    """BackendOptions.runner_factory of DLRM-v2's runs: one runner per harness worker; `plan`:
    the torch runners' (torch_plan.py), resolved from the run's settings."""
    workers = options.worker_count or 1
    if backend == "null":
        return [NullGroupRunner()] * workers
    if options.model_path is None:
        raise HarnessError(f"the {backend} backend needs a DLRM-v2 model")
    if backend == "onnxruntime":
        runner = GroupRunner(
            OnnxPairRunner(options.model_path, options.intra_op_threads), max_pairs
        )
        return [runner] * workers
    if backend == "torch":
        from mlperf_harness.benchmarks.dlrm_v2.torch_runner import torch_group_runners

        if plan is None:
            raise HarnessError("DLRM-v2's torch runners need their plan (torch_plan.torch_plan)")
        return torch_group_runners(options, max_pairs=max_pairs, plan=plan)
    raise HarnessError(f"DLRM-v2 runs on onnxruntime (CPU), torch (GPU) or null, not {backend}")
