"""RNN-T's CPU runner: the three ONNX graphs (onnx_graphs.py) on ONNX Runtime, a batch of utterances
encoded in one call and greedily decoded together (greedy.py).

A batch's response rows are int64: column 0 each utterance's symbol count, then its symbols
(responses.py cuts each to its own length). The null backend answers every utterance with no
symbols."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.null.runner import NullRunner
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.rnnt.greedy import F32, I64, greedy_decode
from mlperf_harness.benchmarks.rnnt.model_files import RnntModelFiles
from mlperf_harness.benchmarks.rnnt.topology import RnntSizes
from mlperf_harness.benchmarks.rnnt.utterance_store import UtteranceStore
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore


class RnntSessions:
    """The three graphs' ONNX Runtime sessions and the whole batch's inference with them."""

    def __init__(
        self,
        graphs: Mapping[str, Path | bytes],
        sizes: RnntSizes,
        threads: int | None = None,
    ) -> None:
        """graphs: each part's file, or its serialised bytes (the stand-in's build)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
        self.sizes = sizes
        sessions = {}
        for part, path in graphs.items():
            try:
                sessions[part] = ort.InferenceSession(
                    path if isinstance(path, bytes) else str(path),
                    options,
                    providers=["CPUExecutionProvider"],
                )
            except Exception as error:  # ORT's own exception types, one per kind of bad file
                first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
                shown = f"the {part} graph" if isinstance(path, bytes) else str(path)
                raise HarnessError(f"onnxruntime cannot load {shown}: {first}") from error
        # The stand-in's build has no joint network yet while it encodes its training utterances.
        self._encoder = sessions.get("encoder")
        self._prediction = sessions.get("prediction")
        self._joint = sessions.get("joint")

    def encode(self, features: F32, lengths: I64) -> tuple[F32, I64]:
        """[B, T, 240] (T even) and frames -> encoder output [B, T / 2, H] and its frames."""
        assert self._encoder is not None
        (encoded,) = self._encoder.run(
            ["encoded"],
            {"features": np.ascontiguousarray(features.transpose(1, 0, 2)), "lengths": lengths},
        )
        return encoded, (lengths + 1) // 2

    def prediction(self, symbols: I64, h: F32, c: F32) -> tuple[F32, F32, F32]:
        assert self._prediction is not None
        g, h_out, c_out = self._prediction.run(
            ["g", "h_out", "c_out"], {"symbol": symbols, "h_in": h, "c_in": c}
        )
        return g, h_out, c_out

    def joint(self, f: F32, g: F32) -> I64:
        assert self._joint is not None
        (best,) = self._joint.run(["symbol"], {"f": np.ascontiguousarray(f), "g": g})
        result: I64 = best
        return result

    def transcribe(self, features: F32, lengths: I64) -> I64:
        """Padded features [B, T, 240] and frames [B] -> [B, 1 + width] counts and symbols."""
        longest = int(lengths.max(initial=1))
        longest += longest % 2
        encoded, frames = self.encode(np.asarray(features[:, :longest], np.float32), lengths)
        return greedy_decode(
            encoded,
            frames,
            self.prediction,
            self.joint,
            self.sizes.prediction_layers,
            self.sizes.prediction_hidden,
        )


class OnnxRnntRunner(Runner):
    name = "onnxruntime"

    def __init__(self, model_dir: Path, threads: int | None = None) -> None:
        self._model_dir = model_dir
        self._threads = threads
        self._sessions: RnntSessions | None = None

    def activate(self) -> None:
        files = RnntModelFiles.read(self._model_dir)
        self._sessions = RnntSessions(files.graphs(), files.sizes, self._threads)

    def _active(self) -> RnntSessions:
        if self._sessions is None:
            raise RuntimeError("the RNN-T runner was not activated")
        return self._sessions

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        """A batch of features [B, T, 240], every frame counted (the warm-up's call)."""
        features = np.asarray(batch, np.float32)
        lengths = np.full(len(features), features.shape[1], np.int64)
        return self._active().transcribe(features, lengths)

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        if not isinstance(store, UtteranceStore):
            raise HarnessError("RNN-T's runners read an UtteranceStore")
        lengths = store.batch_lengths(indices)
        return self._active().transcribe(np.asarray(store.gather(indices)), lengths)

    def deactivate(self) -> None:
        self._sessions = None


class NullRnntRunner(NullRunner):
    """No model: every utterance answered with no symbols (the harness's own cost)."""

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.int64]:
        return np.zeros((len(indices), 1), np.int64)


def rnnt_runners(backend: str, options: BackendOptions) -> list[Runner]:
    """BackendOptions.runner_factory of RNN-T's runs: one runner per harness worker."""
    workers = options.worker_count or 1
    if backend == "null":
        return [NullRnntRunner()] * workers
    if options.model_path is None:
        raise HarnessError(f"the {backend} backend needs an RNN-T model directory")
    if backend == "onnxruntime":
        runner: Runner = OnnxRnntRunner(options.model_path, options.intra_op_threads)
        return [runner] * workers
    if backend == "torch":
        from mlperf_harness.benchmarks.rnnt.torch_engine import torch_rnnt_runners

        return torch_rnnt_runners(options)
    raise HarnessError(f"RNN-T runs on onnxruntime (CPU), torch (GPU) or null, not {backend}")


def response_rows(
    outputs: npt.NDArray[np.generic],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A batch's runner output [B, 1 + width] -> (rows of symbols [B, width], bytes of each)."""
    batch = np.asarray(outputs, np.int64)
    counts = batch[:, 0]
    rows = (
        np.ascontiguousarray(batch[:, 1:])
        if batch.shape[1] > 1
        else np.zeros((len(batch), 0), np.int64)
    )
    return rows, counts * 8
