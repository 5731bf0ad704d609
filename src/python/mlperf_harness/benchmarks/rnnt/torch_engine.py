"""RNN-T on a CUDA GPU (the torch backend): written for the lent H100/H200 machines, NOT RUN in this
repository's CI or by its author (no GPU here): docs/rnnt.md says what was not measured.

- Weights: a model directory's (model_files.py: the ONNX graphs' initialisers are not re-read: the
  weights come from the checkpoint, checkpoint.read_checkpoint, or for timing from
  `--model_path real-size` seeded at the reference's shapes, weights.seeded_weights(REAL)).
- Encoder: torch.nn.LSTM (cuDNN) in fp16, the pre-stacking outputs past each utterance's length
  zeroed before time stacking as the ONNX graph does.
- Greedy decoding for the whole batch on the GPU: each step runs the joint network for every
  utterance at its own frame and the prediction network on the symbols just chosen, and keeps the
  prediction state only where a symbol was emitted (utterances done or blank masked out), exactly
  greedy.py's decisions; the step has fixed shapes and no host synchronisation, so it is captured
  once per batch size as a CUDA graph and replayed STEPS_PER_CHECK times between looks at whether
  any utterance is still decoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.benchmarks.rnnt.topology import MAX_SYMBOLS_PER_STEP, REAL, SOS, RnntSizes
from mlperf_harness.benchmarks.rnnt.utterance_store import UtteranceStore
from mlperf_harness.benchmarks.rnnt.weights import Weights, seeded_weights
from mlperf_harness.datasets.librispeech.alphabet import BLANK
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

REAL_SIZE = "real-size"  # --model_path real-size: the reference's shapes, seeded weights
STEPS_PER_CHECK = 32
SYMBOLS_PER_FRAME_BOUND = 4  # the output's width per encoder frame before it is grown


def load_weights(model_path: Path) -> tuple[Weights, RnntSizes]:
    if str(model_path) == REAL_SIZE:
        return seeded_weights(REAL, 0), REAL
    if model_path.suffix == ".pt":
        from mlperf_harness.benchmarks.rnnt.checkpoint import read_checkpoint

        return read_checkpoint(model_path)
    raise HarnessError(
        f"the torch RNN-T engine reads the published checkpoint (rnnt.pt) or {REAL_SIZE!r}, not "
        f"{model_path}"
    )


class RnntTorchEngine:
    def __init__(self, weights: Weights, sizes: RnntSizes, device: Any) -> None:
        import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

        self.torch, self.sizes, self.device = torch, sizes, device
        half = torch.float16

        def lstm(prefix: str, inputs: int, hidden: int, layers: int) -> Any:
            module = torch.nn.LSTM(inputs, hidden, layers)
            state = {
                name.split(".")[-1]: torch.from_numpy(weights[name])
                for name in weights
                if name.startswith(prefix + ".")
            }
            module.load_state_dict(state)
            return module.to(device=device, dtype=half).eval()

        enc = sizes.encoder_hidden
        self.pre = lstm("encoder.pre_rnn.lstm", sizes.features, enc, sizes.pre_layers)
        self.post = lstm("encoder.post_rnn.lstm", sizes.stack_time * enc, enc, sizes.post_layers)
        self.pred = lstm(
            "prediction.dec_rnn.lstm",
            sizes.prediction_hidden,
            sizes.prediction_hidden,
            sizes.prediction_layers,
        )
        table = np.concatenate(
            [weights["prediction.embed.weight"], np.zeros((1, sizes.prediction_hidden), np.float32)]
        )
        self.embed = torch.from_numpy(table).to(device=device, dtype=half)
        self.w0 = torch.from_numpy(weights["joint.net.0.weight"]).to(device=device, dtype=half)
        self.b0 = torch.from_numpy(weights["joint.net.0.bias"]).to(device=device, dtype=half)
        self.w3 = torch.from_numpy(weights["joint.net.3.weight"]).to(device=device, dtype=half)
        self.b3 = torch.from_numpy(weights["joint.net.3.bias"]).to(device=device, dtype=half)
        self._graphs: dict[tuple[int, int], Any] = {}

    def encode(self, features: Any, lengths: Any) -> tuple[Any, Any]:
        """[B, T, 240] fp16 (T even), [B] int64 -> [B, T / 2, H], frames."""
        torch = self.torch
        x, _ = self.pre(features.transpose(0, 1))
        inside = torch.arange(x.shape[0], device=x.device)[:, None] < lengths[None, :]
        x = x * inside[:, :, None].to(x.dtype)
        b = x.shape[1]
        x = x.transpose(0, 1).reshape(b, -1, self.sizes.stack_time * x.shape[2]).transpose(0, 1)
        x, _ = self.post(x)
        return x.transpose(0, 1).contiguous(), (lengths + 1) // 2

    def _step(self, s: dict[str, Any]) -> None:
        """One greedy step of the whole batch, in place on the state tensors `s` (graph-safe)."""
        torch = self.torch
        rows = s["rows"]
        frame = torch.minimum(s["frame"], s["last_frame"])
        f = s["encoded"][rows, frame]
        hidden = torch.relu(torch.cat([f, s["g"]], dim=1) @ self.w0.T + self.b0)
        best = (hidden @ self.w3.T + self.b3).argmax(dim=1)
        active = s["frame"] < s["frames"]
        emit = active & (best != BLANK)
        g_new, (h_new, c_new) = self.pred(
            self.embed[torch.where(emit, best, SOS)][None], (s["h"], s["c"])
        )
        keep = emit[:, None]
        s["g"].copy_(torch.where(keep, g_new[0], s["g"]))
        s["h"].copy_(torch.where(keep[None], h_new, s["h"]))
        s["c"].copy_(torch.where(keep[None], c_new, s["c"]))
        slot = torch.minimum(s["count"], torch.full_like(s["count"], s["out"].shape[1] - 1))
        s["out"][rows, slot] = torch.where(emit, best, s["out"][rows, slot])
        s["count"].add_(emit.long())
        s["here"].add_(emit.long())
        move = active & (~emit | (s["here"] >= MAX_SYMBOLS_PER_STEP))
        s["frame"].add_(move.long())
        s["here"].masked_fill_(move, 0)

    def decode(self, encoded: Any, frames: Any) -> npt.NDArray[np.int64]:
        torch = self.torch
        b, t = encoded.shape[0], encoded.shape[1]
        layers, pred = self.sizes.prediction_layers, self.sizes.prediction_hidden
        zeros = torch.zeros(layers, b, pred, device=self.device, dtype=torch.float16)
        g, (h, c) = self.pred(
            self.embed[torch.full((b,), SOS, device=self.device)][None], (zeros, zeros)
        )
        state = {
            "rows": torch.arange(b, device=self.device),
            "encoded": encoded,
            "frames": frames,
            "last_frame": (frames - 1).clamp(min=0),
            "frame": torch.zeros(b, dtype=torch.long, device=self.device),
            "here": torch.zeros(b, dtype=torch.long, device=self.device),
            "count": torch.zeros(b, dtype=torch.long, device=self.device),
            "out": torch.zeros(
                b, t * SYMBOLS_PER_FRAME_BOUND, dtype=torch.long, device=self.device
            ),
            "g": g[0].contiguous(),
            "h": h.contiguous(),
            "c": c.contiguous(),
        }
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            self._step(state)  # warm-up outside the graph (cuDNN picks its kernels)
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            for _ in range(STEPS_PER_CHECK):
                self._step(state)
        while bool((state["frame"] < state["frames"]).any()):
            graph.replay()
        counts = state["count"].cpu().numpy()
        if int(counts.max(initial=0)) > state["out"].shape[1]:
            raise HarnessError(
                "an utterance emitted more symbols than the GPU decoder's buffer holds: raise "
                "SYMBOLS_PER_FRAME_BOUND in benchmarks/rnnt/torch_engine.py"
            )
        out = state["out"][:, : max(1, int(counts.max(initial=0)))].cpu().numpy()
        result: npt.NDArray[np.int64] = np.concatenate([counts[:, None], out], axis=1).astype(
            np.int64
        )
        return result


class TorchRnntRunner(Runner):
    name = "torch"

    def __init__(self, model_path: Path, device_index: int) -> None:
        self._model_path = model_path
        self.device_index = device_index
        self._engine: RnntTorchEngine | None = None

    def activate(self) -> None:
        import torch  # pants: no-infer-dep

        weights, sizes = load_weights(self._model_path)
        self._engine = RnntTorchEngine(weights, sizes, torch.device("cuda", self.device_index))

    def _transcribe(
        self, features: npt.NDArray[np.float32], lengths: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        assert self._engine is not None
        torch = self._engine.torch
        longest = int(lengths.max(initial=1))
        longest += longest % 2
        device = self._engine.device
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(features[:, :longest])).pin_memory()
            x = x.to(device, non_blocking=True).half()
            n = torch.from_numpy(lengths).to(device)
            encoded, frames = self._engine.encode(x, n)
            return self._engine.decode(encoded, frames)

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        features = np.asarray(batch, np.float32)
        return self._transcribe(features, np.full(len(features), features.shape[1], np.int64))

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        if not isinstance(store, UtteranceStore):
            raise HarnessError("RNN-T's runners read an UtteranceStore")
        return self._transcribe(np.asarray(store.gather(indices)), store.batch_lengths(indices))

    def deactivate(self) -> None:
        self._engine = None


def torch_rnnt_runners(options: BackendOptions) -> list[Runner]:
    import torch  # pants: no-infer-dep

    if options.model_path is None:
        raise HarnessError("the torch backend needs --model_path rnnt.pt or real-size")
    streams = options.gpu_inference_streams or 1
    return [
        TorchRnntRunner(options.model_path, gpu)
        for gpu in range(torch.cuda.device_count())
        for _ in range(streams)
    ]
