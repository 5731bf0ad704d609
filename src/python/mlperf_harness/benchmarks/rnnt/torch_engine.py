"""RNN-T on a CUDA GPU (the torch backend): written for the lent H100/H200 machines; its decoding is
checked on the CPU against the ONNX runner where torch is installed (tests), its GPU path run by
benchmarks/rnnt/device/gpu_scenarios.sh (docs/rnnt.md says what was and was not measured).

- Weights: a model directory's `weights.npz` (model_files.py), the published checkpoint `rnnt.pt`
  (checkpoint.read_checkpoint), or the real-size stand-in's seeded ones (real_size.py).
- Encoder: torch.nn.LSTM (cuDNN) in fp16 on a GPU (fp32 on the CPU), on the padded batch or on
  packed sequences (ENCODER_INPUTS, chosen per batch: `encode`), the pre-stacking outputs past
  each utterance's length zeros before time stacking as in the ONNX graph; then the joint
  network's encoder half (Linear 0's columns for the frame, and its bias) for every frame at once,
  so that a step only adds the prediction half.
- Greedy decoding of the whole batch on the device: each step runs the joint network for every
  utterance at its own frame and the prediction network (two LSTM cells written out: one time step,
  where cuDNN's sequence kernels gain nothing) on the symbols just chosen, and keeps the prediction
  state only where a symbol was emitted (finished utterances and blanks masked out): greedy.py's
  decisions exactly, and the same arg max (the first of equal logits). The step has fixed shapes,
  no host synchronisation and no allocation outside the graph's pool, so on a GPU STEPS_PER_CHECK
  steps are captured once per padded batch size (powers of two up to the run's batch, empty rows
  never active) as a CUDA graph on the runner's own stream, and replayed: first as often as the
  longest utterance's frames need at least (every frame takes a step), then until no utterance is
  decoding (one host check a replay; further steps on a finished batch change nothing).
- The real-size stand-in's decisions are FORCED (real_size.py): the same kernels run, the emitted
  symbol is a schedule's.
- Each part of a call (the upload, the encoder's parts, each replay and each host check) runs in a
  named range (`part`): call_profile.py (torch_raw --profile) reads the profiler's GPU time of each
  from them, and can set a timeline that brackets each with CUDA events.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.registry import BackendOptions
from mlperf_harness.backends.torch_cuda.runner import DeviceSamples, spread_over_gpus
from mlperf_harness.benchmarks.rnnt.model_files import RnntModelFiles
from mlperf_harness.benchmarks.rnnt.real_size import find_real_size
from mlperf_harness.benchmarks.rnnt.topology import MAX_SYMBOLS_PER_STEP, REAL, SOS, RnntSizes
from mlperf_harness.benchmarks.rnnt.utterance_store import UtteranceStore
from mlperf_harness.benchmarks.rnnt.weights import Weights, seeded_weights
from mlperf_harness.datasets.librispeech.alphabet import BLANK
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.errors import HarnessError
from mlperf_harness.harness.sample_store import SampleStore

STEPS_PER_CHECK = 32
# How the encoder's LSTMs take a batch (encode()): "padded" (every row through the batch's longest
# utterance, the outputs past each one's end masked to zeros), "packed" (pack_padded_sequence:
# each row through its own frames, at the cost of packing and unpacking around each LSTM), or
# "auto": padded where the batch's frames fill at least PADDED_MIN_FILL of its padded frames.
ENCODER_INPUTS = ("auto", "padded", "packed")
# Derived, not measured as a crossover: one H200's profile of an arrival-order batch of 1,024
# (fill 0.43) spent 34.6 ms in the two packed LSTMs and 15.3 ms packing and unpacking; padded LSTMs
# cost about the packed ones / fill, so padded wins above a fill of 34.6 / (34.6 + 15.3) = 0.69.
# Length-ordered Offline batches fill nearly all; Server's arrival-order batches stay packed.
PADDED_MIN_FILL = 0.7
FRAMES_ROUNDING = 64  # decode buffers hold a multiple of this many encoder frames
FORCED_SYMBOL = 5  # the real-size stand-in's emitted symbol ('e'): any non-blank costs the same
# The named ranges (torch.profiler.record_function) around the parts of a call: call_profile.py
# reads each part's GPU time from them. A range costs the host a microsecond or two when no
# profiler runs (a call opens about 2 + 2 x its replays), and nothing on the GPU.
PART = "rnnt."


class PartTimeline(Protocol):
    """What a profile puts in place of the plain named ranges: its own (call_profile.py's, which
    also brackets each part with CUDA events)."""

    def part(self, name: str) -> AbstractContextManager[Any]: ...


@functools.lru_cache(maxsize=2)
def load_weights(model_path: Path) -> tuple[Weights, RnntSizes, float | None]:
    """(weights, sizes, forced symbols a frame or None) of what --model_path names; read once per
    process (every runner of every GPU shares the host copy)."""
    real = find_real_size(model_path)
    if real is not None:
        return seeded_weights(REAL, real.seed), REAL, real.symbols_per_frame
    if model_path.suffix == ".pt":
        from mlperf_harness.benchmarks.rnnt.checkpoint import read_checkpoint

        weights, sizes = read_checkpoint(model_path)
        return weights, sizes, None
    files = RnntModelFiles.read(model_path)  # one line unless it is a model directory
    return files.weights(), files.sizes, None


def unchecked_replays(longest: int) -> int:
    """The replays decode issues before its first host check, for a batch whose longest utterance
    has `longest` encoder frames: every frame takes a step."""
    return max(1, math.ceil(longest / STEPS_PER_CHECK))


def fills_padding(lengths: npt.NDArray[np.int64], t: int) -> bool:
    """Whether utterances of these lengths fill at least PADDED_MIN_FILL of a batch padded to
    `t` frames ("auto" then runs the encoder on the padded batch)."""
    return bool(np.clip(lengths, 1, None).sum() >= PADDED_MIN_FILL * len(lengths) * max(t, 1))


def padded_batch(count: int) -> int:
    """The batch size a decode graph is captured for: the next power of two."""
    return 1 << max(0, count - 1).bit_length()


class _DecodeState:
    """The static buffers of one padded batch size (what the captured steps read and write)."""

    def __init__(self, engine: RnntTorchEngine, batch: int, frames: int) -> None:
        torch, device, dtype = engine.torch, engine.device, engine.dtype
        sizes = engine.sizes
        self.batch, self.capacity = batch, frames

        def longs(*shape: int) -> Any:
            return torch.zeros(shape, dtype=torch.long, device=device)

        self.fproj = torch.zeros((batch, frames, sizes.joint_hidden), dtype=dtype, device=device)
        self.frames, self.last = longs(batch), longs(batch)  # each utterance's frames, and - 1
        self.frame, self.here, self.count = longs(batch), longs(batch), longs(batch)
        # Room for the most a frame can emit (30 symbols): no batch can overflow it (long
        # transcripts on silence in the warm-up call included). 63 MB at 1,024 x 256 frames.
        self.out = longs(batch, frames * MAX_SYMBOLS_PER_STEP)
        layers, hidden = sizes.prediction_layers, sizes.prediction_hidden
        self.h = torch.zeros((layers, batch, hidden), dtype=dtype, device=device)
        self.c = torch.zeros((layers, batch, hidden), dtype=torch.float32, device=device)
        self.gproj = torch.zeros((batch, sizes.joint_hidden), dtype=dtype, device=device)
        self.graph: Any = None

    def reset(self, engine: RnntTorchEngine, fproj: Any, frames: Any) -> None:
        """A batch's encoder projection [b, t, J] and frames [b] in; rows past b never active."""
        b, t = fproj.shape[0], fproj.shape[1]
        self.fproj[:b, :t].copy_(fproj)
        self.frames.zero_()
        self.frames[:b].copy_(frames)
        self.last.copy_((self.frames - 1).clamp(min=0))
        self.frame.zero_()
        self.here.zero_()
        self.count.zero_()
        self.h.copy_(engine.h0[:, None].expand_as(self.h))
        self.c.copy_(engine.c0[:, None].expand_as(self.c))
        self.gproj.copy_(engine.gproj0[None].expand_as(self.gproj))


class RnntTorchEngine:
    def __init__(
        self,
        weights: Weights,
        sizes: RnntSizes,
        device: Any,
        forced_symbols_per_frame: float | None = None,
    ) -> None:
        torch = import_torch()
        self.torch, self.sizes, self.device = torch, sizes, device
        self.cuda = device.type == "cuda"
        self.dtype = torch.float16 if self.cuda else torch.float32
        self.forced = forced_symbols_per_frame
        self.stream: Any = torch.cuda.Stream(device) if self.cuda else None
        dtype = self.dtype

        def tensor(name: str, kind: Any = dtype) -> Any:
            return torch.from_numpy(np.ascontiguousarray(weights[name])).to(device, kind)

        def lstm(prefix: str, inputs: int, hidden: int, layers: int) -> Any:
            module = torch.nn.LSTM(inputs, hidden, layers)
            module.load_state_dict(
                {
                    name.split(".")[-1]: torch.from_numpy(weights[name])
                    for name in weights
                    if name.startswith(prefix + ".")
                }
            )
            return module.to(device=device, dtype=dtype).eval()

        enc, pred = sizes.encoder_hidden, sizes.prediction_hidden
        self.pre = lstm("encoder.pre_rnn.lstm", sizes.features, enc, sizes.pre_layers)
        self.post = lstm("encoder.post_rnn.lstm", sizes.stack_time * enc, enc, sizes.post_layers)
        # The prediction network's cells: per layer W_ih^T, W_hh^T and the summed biases (fp32).
        prefix = "prediction.dec_rnn.lstm"
        layers = range(sizes.prediction_layers)
        self.w_ih = [tensor(f"{prefix}.weight_ih_l{k}").T.contiguous() for k in layers]
        self.w_hh = [tensor(f"{prefix}.weight_hh_l{k}").T.contiguous() for k in layers]
        self.bias = [
            tensor(f"{prefix}.bias_ih_l{k}", torch.float32)
            + tensor(f"{prefix}.bias_hh_l{k}", torch.float32)
            for k in layers
        ]
        embed = np.concatenate(
            [weights["prediction.embed.weight"], np.zeros((1, pred), np.float32)]
        )  # row SOS: the start of a sentence is a zero vector, as the reference feeds
        self.embed = torch.from_numpy(embed).to(device, dtype)
        w0 = tensor("joint.net.0.weight")  # [J, enc + pred]: the frame first
        self.w0_f, self.w0_g = w0[:, :enc].T.contiguous(), w0[:, enc:].T.contiguous()
        self.b0 = tensor("joint.net.0.bias")
        self.w3, self.b3 = tensor("joint.net.3.weight").T.contiguous(), tensor("joint.net.3.bias")
        self.forced_symbol = torch.tensor(FORCED_SYMBOL, device=device)
        self.blank = torch.tensor(BLANK, device=device)
        # Every utterance starts from the prediction network's output for SOS on a zero state.
        zeros = torch.zeros((sizes.prediction_layers, 1, pred), dtype=dtype, device=device)
        start = torch.tensor([SOS], device=device)
        h0, c0 = self._cells(self.embed[start], zeros, zeros.float())
        self.h0, self.c0 = h0[:, 0], c0[:, 0]
        self.gproj0 = (h0[-1] @ self.w0_g)[0]
        self._states: dict[int, _DecodeState] = {}
        self.timeline: PartTimeline | None = None  # set by a profile only
        self.encoder_input = "auto"  # ENCODER_INPUTS: a raw phase's A/B sets another once
        if self.cuda:  # made on the default stream, read on the runner's: all of it done first
            torch.cuda.synchronize(device)

    def part(self, name: str) -> AbstractContextManager[Any]:
        """The named range of one part of a call (the profile's timeline where it set one)."""
        if self.timeline is not None:
            return self.timeline.part(name)
        range_: AbstractContextManager[Any] = self.torch.profiler.record_function(PART + name)
        return range_

    def _cells(self, x: Any, h: Any, c: Any) -> tuple[Any, Any]:
        """The prediction LSTM one step: x [n, P], h [L, n, P], c [L, n, P] fp32 -> new h, c."""
        torch = self.torch
        hs, cs = [], []
        for layer in range(self.sizes.prediction_layers):
            gates = (x @ self.w_ih[layer] + h[layer] @ self.w_hh[layer]).float() + self.bias[layer]
            i, f, g, o = gates.chunk(4, dim=1)  # PyTorch's gate order
            c_new = torch.sigmoid(f) * c[layer] + torch.sigmoid(i) * torch.tanh(g)
            x = (torch.sigmoid(o) * torch.tanh(c_new)).to(self.dtype)
            hs.append(x)
            cs.append(c_new)
        return torch.stack(hs), torch.stack(cs)

    def set_encoder_input(self, mode: str) -> None:
        """One of ENCODER_INPUTS for every later call (the raw phase's and profile's A/B)."""
        if mode not in ENCODER_INPUTS:
            raise HarnessError(f"the encoder input is one of {ENCODER_INPUTS}, not {mode!r}")
        self.encoder_input = mode

    def padded_input(self, lengths: npt.NDArray[np.int64], t: int) -> bool:
        """Whether encode() runs a batch of these lengths, padded to `t` frames, padded."""
        if self.encoder_input != "auto":
            return self.encoder_input == "padded"
        return fills_padding(lengths, t)

    def encode(self, features: Any, lengths: npt.NDArray[np.int64]) -> tuple[Any, Any]:
        """[b, T, 240] (T even) and frames [b] (on the host) -> the joint's encoder half
        [b, T / 2, J] (with Linear 0's bias) and the encoder frames [b] on the device. Rows past
        an utterance's encoder frames are unspecified: decode never reads them.

        The pre-stacking outputs past each utterance's end are zeros, which is what the ONNX graph
        stacks beside an odd last frame. Both LSTMs are unidirectional, so the output at a frame
        depends on that frame and those before it only: the padded batch and packed sequences give
        the same outputs inside every utterance (each GEMM's rows are computed alike; the packed
        path's shrinking batch may round differently, test_rnnt_torch_engine_with_torch says how
        far). Padded, cuDNN steps every row through the longest utterance and the padded outputs
        are masked; packed, each row only through its own frames (a batch's mean length, not its
        longest, is the cost) and its outputs past the end come back as zeros, but packing and
        unpacking cost copies around each LSTM."""
        t = features.shape[1]
        if self.padded_input(lengths, t):
            return self._encode_padded(features, lengths)
        return self._encode_packed(features, lengths)

    def _encode_padded(self, features: Any, lengths: npt.NDArray[np.int64]) -> tuple[Any, Any]:
        torch, part = self.torch, self.part
        b, t = features.shape[0], features.shape[1]
        stack = self.sizes.stack_time
        frames = (lengths + stack - 1) // stack
        with part("mask"):
            on_device = torch.from_numpy(lengths).to(self.device)
            outside = torch.arange(t, device=self.device)[:, None] >= on_device[None, :]  # [T, b]
        with part("pre_lstm"):
            x, _ = self.pre(features.transpose(0, 1))  # time-major [T, b, H]
        with part("mask"):
            x.masked_fill_(outside[:, :, None], 0)
        with part("stack"):  # frames 2k and 2k + 1 of each utterance side by side
            h = x.shape[2]
            x = x.reshape(t // stack, stack, b, h).transpose(1, 2).reshape(t // stack, b, stack * h)
        with part("post_lstm"):
            x, _ = self.post(x)  # [T / 2, b, H]
        with part("joint_encoder"):
            fproj = (x @ self.w0_f + self.b0).transpose(0, 1)
        with part("frames"):
            return fproj, torch.from_numpy(frames).to(self.device)

    def _encode_packed(self, features: Any, lengths: npt.NDArray[np.int64]) -> tuple[Any, Any]:
        torch, part = self.torch, self.part
        rnn = torch.nn.utils.rnn
        b, t = features.shape[0], features.shape[1]
        stack = self.sizes.stack_time
        frames = (lengths + stack - 1) // stack
        with part("pack"):
            x = rnn.pack_padded_sequence(
                features,
                torch.from_numpy(lengths.clip(min=1)),
                batch_first=True,
                enforce_sorted=False,
            )
        with part("pre_lstm"):
            x, _ = self.pre(x)
        with part("unpack"):
            x, _ = rnn.pad_packed_sequence(x, batch_first=True, total_length=t)  # [b, T, H]
        with part("stack"):
            x = x.reshape(b, t // stack, stack * x.shape[2])
        with part("pack"):
            x = rnn.pack_padded_sequence(
                x, torch.from_numpy(frames.clip(min=1)), batch_first=True, enforce_sorted=False
            )
        with part("post_lstm"):
            x, _ = self.post(x)
        with part("unpack"):
            x, _ = rnn.pad_packed_sequence(x, batch_first=True, total_length=t // stack)
        with part("joint_encoder"):
            fproj = x @ self.w0_f + self.b0
        with part("frames"):
            return fproj, torch.from_numpy(frames).to(self.device)

    def _step(self, s: _DecodeState) -> None:
        """One greedy step of the whole padded batch, in place on `s` (graph-safe)."""
        torch = self.torch
        frame = torch.minimum(s.frame, s.last)
        width = s.fproj.shape[2]
        f = s.fproj.gather(1, frame[:, None, None].expand(-1, 1, width))[:, 0]
        logits = torch.relu(f + s.gproj) @ self.w3 + self.b3
        best = logits.argmax(dim=1)
        if self.forced is not None:  # the real-size stand-in: floor(r t) symbols by frame t
            due = torch.floor((frame + 1) * self.forced) - torch.floor(frame * self.forced)
            best = torch.where(s.here < due.long(), self.forced_symbol, self.blank)
        active = s.frame < s.frames
        emit = active & (best != BLANK)
        h, c = self._cells(self.embed[torch.where(emit, best, SOS)], s.h, s.c)
        keep = emit[:, None]
        s.h.copy_(torch.where(keep[None], h, s.h))
        s.c.copy_(torch.where(keep[None], c, s.c))
        s.gproj.copy_(torch.where(keep, h[-1] @ self.w0_g, s.gproj))
        slot = s.count.clamp(max=s.out.shape[1] - 1)[:, None]
        s.out.scatter_(1, slot, torch.where(keep, best[:, None], s.out.gather(1, slot)))
        s.count.add_(emit.long())
        s.here.add_(emit.long())
        move = active & (~emit | (s.here >= MAX_SYMBOLS_PER_STEP))
        s.frame.add_(move.long())
        s.here.masked_fill_(move, 0)

    def _steps(self, s: _DecodeState) -> None:
        for _ in range(STEPS_PER_CHECK):
            self._step(s)

    def state(self, batch: int, frames: int) -> _DecodeState:
        """The decode buffers (and on a GPU the captured steps) of a padded batch size, made
        anew when a batch has more frames than they hold."""
        state = self._states.get(batch)
        if state is not None and state.capacity >= frames:
            return state
        torch = self.torch
        capacity = FRAMES_ROUNDING * math.ceil(max(frames, 1) / FRAMES_ROUNDING)
        self._states.pop(batch, None)  # the old buffers and graph go before the new are made
        state = _DecodeState(self, batch, capacity)
        if self.cuda:  # every row inactive: the warm-up steps change nothing, capture runs none
            self._steps(state)  # on the runner's stream: kernels chosen, modules loaded
            self.stream.synchronize()
            state.graph = torch.cuda.CUDAGraph()
            # The runner's own stream (torch's default capture stream is made once, on the first
            # GPU) and thread-local capture: the other runners' threads keep running meanwhile.
            with torch.cuda.graph(
                state.graph, stream=self.stream, capture_error_mode="thread_local"
            ):
                self._steps(state)
        self._states[batch] = state
        return state

    def decode(self, fproj: Any, frames: Any, longest: int) -> npt.NDArray[np.int64]:
        """[b, 1 + width] int64 (greedy.py's layout) for a batch whose longest utterance has
        `longest` encoder frames (known on the host: no synchronisation to learn it)."""
        b, part = fproj.shape[0], self.part
        with part("state"):
            s = self.state(padded_batch(b), fproj.shape[1])
        with part("reset"):
            s.reset(self, fproj, frames)
        run = s.graph.replay if s.graph is not None else (lambda: self._steps(s))
        for _ in range(unchecked_replays(longest)):
            with part("replay"):
                run()  # every utterance takes at least one step a frame
        while True:
            with part("check"):
                decoding = bool((s.frame < s.frames).any())
            if not decoding:
                break
            with part("replay"):
                run()
        with part("readback"):
            counts = s.count[:b].cpu().numpy()
            out = s.out[:b, : max(1, int(counts.max(initial=0)))].cpu().numpy()
        result: npt.NDArray[np.int64] = np.concatenate([counts[:, None], out], axis=1).astype(
            np.int64
        )
        return result

    def encode_batch(self, features: Any, lengths: npt.NDArray[np.int64]) -> tuple[Any, Any, int]:
        """features [b, >= T, 240] on the device (any float dtype), lengths [b] on the host ->
        encode's two results and the batch's longest utterance in encoder frames (decode's)."""
        longest = int(lengths.max(initial=1))
        longest += longest % 2
        host = np.ascontiguousarray(lengths, np.int64)
        with self.part("cast"):
            x = features[:, :longest].to(self.dtype)
        fproj, frames = self.encode(x, host)
        return fproj, frames, (longest + 1) // 2

    def transcribe(self, features: Any, lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """features [b, >= T, 240] on the device (any float dtype), lengths [b] on the host."""
        return self.decode(*self.encode_batch(features, lengths))


class TorchRnntRunner(Runner):
    name = "torch"

    def __init__(
        self,
        model_path: Path,
        device_index: int,
        batch_size: int,
        device_samples: DeviceSamples | None,
        device: str = "cuda",
    ) -> None:
        self._model_path = model_path
        self.device_index = device_index
        self._batch_size = batch_size
        self._samples = device_samples
        self._device_kind = device
        self._engine: RnntTorchEngine | None = None

    def context(self) -> Any:
        """Where every call computes: inference mode, and on a GPU its device and own stream."""
        engine = self.engine()
        torch = engine.torch
        stack = contextlib.ExitStack()
        stack.enter_context(torch.inference_mode())
        if engine.cuda:
            stack.enter_context(torch.cuda.device(engine.device))
            stack.enter_context(torch.cuda.stream(engine.stream))
        return stack

    def activate(self) -> None:
        torch = import_torch()
        weights, sizes, forced = load_weights(self._model_path)
        cuda = self._device_kind == "cuda"
        device = torch.device("cuda", self.device_index) if cuda else torch.device("cpu")
        with torch.inference_mode():
            self._engine = RnntTorchEngine(weights, sizes, device, forced)

    def engine(self) -> RnntTorchEngine:
        """The active engine (activate() made it)."""
        if self._engine is None:
            raise RuntimeError("the RNN-T torch runner was not activated")
        return self._engine

    def samples_loaded(self, store: SampleStore) -> None:
        """The samples to this GPU (start_from_device), and every padded batch size's decode
        graph captured for the longest loaded utterance, before LoadGen times anything."""
        engine = self.engine()
        if self._samples is not None:
            self._samples.update(engine.torch, store)
        if not isinstance(store, UtteranceStore) or store.loaded_samples() is None:
            return
        frames = (int(store.lengths.max(initial=1)) + 1) // 2
        with self.context():
            size = 1
            while size <= padded_batch(self._batch_size):
                engine.state(size, frames)
                size *= 2

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        """A batch of features [B, T, 240], every frame counted (the warm-up's call)."""
        features = np.asarray(batch, np.float32)
        lengths = np.full(len(features), features.shape[1], np.int64)
        engine = self.engine()
        with self.context():
            with engine.part("upload"):
                x = engine.torch.from_numpy(np.ascontiguousarray(features)).to(engine.device)
            return engine.transcribe(x, lengths)

    def infer_samples(self, store: SampleStore, indices: Sequence[int]) -> npt.NDArray[np.generic]:
        if not isinstance(store, UtteranceStore):
            raise HarnessError("RNN-T's runners read an UtteranceStore")
        engine = self.engine()
        with self.context():
            return engine.transcribe(self.upload(store, indices), store.batch_lengths(indices))

    def upload(self, store: UtteranceStore, indices: Sequence[int]) -> Any:
        """The features of the utterances at `indices` on the device (in `context()`): gathered
        from this GPU's copy of the loaded samples, or copied from the host's."""
        engine = self.engine()
        torch = engine.torch
        with engine.part("upload"):
            if self._samples is not None:
                rows = self._samples.rows_of(store, indices)
                return self._samples.data.index_select(0, torch.from_numpy(rows).to(engine.device))
            host = torch.from_numpy(np.ascontiguousarray(store.gather(indices)))
            return (host.pin_memory() if engine.cuda else host).to(engine.device, non_blocking=True)

    def deactivate(self) -> None:
        self._engine = None


def torch_rnnt_runners(options: BackendOptions) -> list[Runner]:
    """`gpu_inference_streams` runners on every GPU, each with its own stream and graphs, sharing
    that GPU's copy of the loaded samples (start_from_device)."""
    if options.model_path is None:
        raise HarnessError(
            "the torch backend needs --model_path (rnnt.pt, a model directory or the real-size "
            "stand-in's)"
        )
    model_path = options.model_path
    batch = options.batch_size or 1
    samples: dict[int, DeviceSamples | None] = {}

    def make(gpu: int) -> Runner:
        if gpu not in samples:
            samples[gpu] = DeviceSamples(gpu) if options.start_from_device else None
        return TorchRnntRunner(model_path, gpu, batch, samples[gpu])

    return spread_over_gpus(options.gpu_inference_streams or 1, make)
