"""Where one call of RNN-T's torch runner spends its time (`torch_raw --profile`, the device
script's `profile` phase), for one batch of the loaded utterances (the first `batch` of torch_raw's
shuffle: what the run's first call takes):

1. timeline: CALLS calls of the runner's infer_samples, exactly as a run makes them (after WARM
   more), every part of the call (the engine's named ranges: upload; the encoder's cast, then on
   the padded batch mask (the lengths' mask, made and applied), pre_lstm, stack, post_lstm, or on
   packed sequences pack, pre_lstm, unpack, stack, pack, post_lstm, unpack, then joint_encoder,
   frames; the decode's state, reset, each
   replay of the captured steps, each host check between replays, readback) bracketed by CUDA
   events on the runner's stream and by the host's clock (PartTimeline). A part's GPU ms is its span
   of the stream's timeline: its kernels and the gaps between them, so a check's span is the host's
   round trip (the GPU waits for the next replay meanwhile). The call's span from the upload's first
   event to the readback's last, and what lies outside every part (the host's Python between
   parts). The decode's steps: run (replays x STEPS_PER_CHECK), the most any utterance needed (its
   frames and symbols: at most that, a frame's 30th symbol moving on in the same step; exactly that
   for the real-size stand-in, whose frames emit at most one), the steps run after every utterance
   had finished, and the share of the padded batch's row-steps that did work (rows of finished and
   padding utterances step too).
2. kernels: the upload, the encoder (encode_batch) and the decode, each called alone PROFILED_CALLS
   times under torch.profiler (engines/kernel_profile.py): each part's kernel ms (kernels only, the
   gaps left out), the top kernels of each, the host's ms, and the CUDA events' ms of the same call.

On the CPU (the tests) the marks are the host's clock and the "kernels" torch's CPU ops. The
profiler's recording and the events add a little to the host's ms of part 1 and 2.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlperf_harness.benchmarks.rnnt.torch_engine import (
    PART,
    STEPS_PER_CHECK,
    TorchRnntRunner,
    padded_batch,
    unchecked_replays,
)
from mlperf_harness.benchmarks.rnnt.utterance_store import UtteranceStore
from mlperf_harness.engines.call_split import CudaMarks, HostMarks, Marks
from mlperf_harness.engines.kernel_profile import profiled

CALLS = 3
WARM = 1
PROFILED_CALLS = 2
TOP_KERNELS = 6
UPLOAD = ("upload",)
# The encoder's parts on each input (torch_engine.ENCODER_INPUTS), and all of them in table order.
ENCODER_PARTS = {
    "padded": ("cast", "mask", "pre_lstm", "stack", "post_lstm", "joint_encoder", "frames"),
    "packed": (
        "cast",
        "pack",
        "pre_lstm",
        "unpack",
        "stack",
        "post_lstm",
        "joint_encoder",
        "frames",
    ),
}
ENCODER: tuple[str, ...] = ("cast", "mask", "pack", "pre_lstm", "unpack", "stack", "post_lstm")
ENCODER += ("joint_encoder", "frames")
DECODE = ("state", "reset", "replay", "check", "readback")
STAGES = {"upload": UPLOAD, "encoder": ENCODER, "decode": DECODE}


@dataclass(frozen=True)
class Span:
    name: str
    start: Any  # a mark (CUDA event or the host's clock)
    end: Any
    host_seconds: float


class PartTimeline:
    """The engine's parts as named ranges, each also bracketed by two marks and the host's clock
    (the engine's `timeline`: torch_engine.PartTimeline)."""

    def __init__(self, torch: Any, marks: Marks) -> None:
        self.torch, self.marks = torch, marks
        self.spans: list[Span] = []

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        start, began = self.marks.mark(), time.perf_counter()
        with self.torch.profiler.record_function(PART + name):
            yield
        self.spans.append(Span(name, start, self.marks.mark(), time.perf_counter() - began))


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else 0.0


def call_timeline(spans: Sequence[Span], marks: Marks, host_ms: float) -> dict[str, Any]:
    """One call's figures from its spans (read after the call's closing synchronisation)."""

    def ms(start: Any, end: Any) -> float:
        return 1e3 * marks.seconds(start, end)

    parts: dict[str, dict[str, float]] = {}
    for span in spans:
        part = parts.setdefault(span.name, {"count": 0, "gpu_ms": 0.0, "host_ms": 0.0})
        part["count"] += 1
        part["gpu_ms"] += ms(span.start, span.end)
        part["host_ms"] += 1e3 * span.host_seconds
    total = ms(spans[0].start, spans[-1].end)
    return {
        "call_ms": total,
        "host_ms": host_ms,
        "outside_parts_ms": total - sum(p["gpu_ms"] for p in parts.values()),
        "parts": parts,
        "replay_ms": [ms(s.start, s.end) for s in spans if s.name == "replay"],
    }


def mean_timeline(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The mean of identical calls' figures (every call decodes the same batch the same way)."""
    names = list(calls[0]["parts"])
    replays = [ms for call in calls for ms in call["replay_ms"]]
    return {
        "calls": len(calls),
        "call_ms": [round(call["call_ms"], 3) for call in calls],
        "call_ms_mean": round(_mean([c["call_ms"] for c in calls]), 3),
        "host_ms_mean": round(_mean([c["host_ms"] for c in calls]), 3),
        "outside_parts_ms": round(_mean([c["outside_parts_ms"] for c in calls]), 3),
        "parts": {
            name: {
                key: round(_mean([c["parts"][name][key] for c in calls]), 3)
                for key in ("count", "gpu_ms", "host_ms")
            }
            for name in names
        },
        "replay_ms": {
            "mean": round(_mean(replays), 3),
            "min": round(min(replays, default=0.0), 3),
            "max": round(max(replays, default=0.0), 3),
        },
    }


def decode_steps(runner: TorchRnntRunner, batch: int, replays: int, longest: int) -> dict[str, Any]:
    """The last call's steps, from its decode buffers: run, needed, run after all had finished."""
    engine = runner.engine()
    padded = padded_batch(batch)
    state = engine.state(padded, 0)  # the buffers the call used (no capacity is too small)
    with runner.context():
        frames = state.frames[:batch].cpu().numpy()
        symbols = state.count[:batch].cpu().numpy()
    needed = frames + symbols  # steps each utterance was active (at most: see the docstring)
    run = replays * STEPS_PER_CHECK
    most = int(needed.max(initial=0))
    return {
        "padded_batch": padded,
        "replays": replays,
        "unchecked_replays": unchecked_replays(longest),
        "steps_run": run,
        "steps_needed_most": most,
        "steps_needed_mean": round(float(needed.mean()), 1),
        "steps_after_all_finished": run - most,
        "row_steps_working_share": round(float(needed.sum()) / (run * padded), 4),
        "symbols": int(symbols.sum()),
    }


def profile_batch(
    torch: Any,
    runner: TorchRnntRunner,
    store: UtteranceStore,
    indices: Sequence[int],
    on_gpu: bool = True,
    calls: int = CALLS,
    label: str = "",
) -> dict[str, Any]:
    """Parts 1 and 2 of the module's docstring for one batch (`indices`, its samples loaded);
    `label` says which batch it is (its order) in the table."""
    engine = runner.engine()
    lengths = store.batch_lengths(indices)
    longest = (int(lengths.max(initial=1)) + 1) // 2
    padded_to = int(lengths.max(initial=1)) + int(lengths.max(initial=1)) % 2  # encode_batch's T
    record: dict[str, Any] = {
        "label": label,
        "encoder_input": "padded" if engine.padded_input(lengths, padded_to) else "packed",
        "batch": len(indices),
        "encoder_frames_mean": round(float(((lengths + 1) // 2).mean()), 1),
        "encoder_frames_longest": longest,
    }
    for _ in range(WARM):
        runner.infer_samples(store, indices)
    marks: Marks = CudaMarks(torch) if on_gpu else HostMarks()
    timeline = PartTimeline(torch, marks)
    timed = []
    engine.timeline = timeline
    try:
        for _ in range(calls):
            timeline.spans = []
            began = time.perf_counter()
            runner.infer_samples(store, indices)  # ends reading back: the host waited for all
            host_ms = 1e3 * (time.perf_counter() - began)
            if on_gpu:
                torch.cuda.synchronize()
            timed.append(call_timeline(timeline.spans, marks, host_ms))
    finally:
        engine.timeline = None
    record["timeline"] = mean_timeline(timed)
    replays = len(timed[-1]["replay_ms"])
    record["decode_steps"] = decode_steps(runner, len(indices), replays, longest)
    with runner.context():
        x = runner.upload(store, indices)
        fproj, frames, _ = engine.encode_batch(x, lengths)
        work = {
            "upload": lambda: runner.upload(store, indices),
            "encoder": lambda: engine.encode_batch(x, lengths),
            "decode": lambda: engine.decode(fproj, frames, longest),
        }
        record["kernels"] = {
            stage: profiled(
                torch,
                call,
                calls=PROFILED_CALLS,
                top=TOP_KERNELS,
                label_prefix=PART,
                on_gpu=on_gpu,
            )
            for stage, call in work.items()
        }
    return record


def first_batch(indices: Sequence[int], batch: int, seed: int) -> list[int]:
    """The first `batch` samples of torch_raw's seeded shuffle (wrapping as it does)."""
    order = np.random.default_rng(seed).permutation(np.asarray(indices))
    return [int(i) for i in np.resize(order, batch)]


# --- the table -------------------------------------------------------------------------------


def _share(ms: float, whole: float) -> str:
    return f"{100 * ms / whole:.0f}%" if whole > 0 else "-"


def _row(what: str, count: Any, gpu: float | None, whole: float, kernel: Any, host: Any) -> str:
    def num(value: Any) -> str:
        return "" if value is None else f"{value:.3f}"

    share = "" if gpu is None else _share(gpu, whole)
    return f"| {what} | {count} | {num(gpu)} | {share} | {num(kernel)} | {num(host)} |"


def batch_lines(record: dict[str, Any], on_gpu: bool = True) -> list[str]:
    """One batch's rows of the table."""
    t, steps, kernels = record["timeline"], record["decode_steps"], record["kernels"]
    whole, parts = t["call_ms_mean"], t["parts"]
    clock = "CUDA events" if on_gpu else "the host's clock"
    label = f"{record['label']}, " if record.get("label") else ""
    lines = [
        f"| **batch {record['batch']:,}** ({label}encoder {record.get('encoder_input', '-')}; "
        f"encoder frames: mean {record['encoder_frames_mean']}, "
        f"longest {record['encoder_frames_longest']}): one call {whole:.3f} ms on {clock} "
        f"(calls {', '.join(f'{ms:.1f}' for ms in t['call_ms'])}), host {t['host_ms_mean']:.3f} "
        f"ms | 1 | {whole:.3f} | 100% | | |"
    ]
    for stage, names in STAGES.items():
        profile = kernels[stage]
        stage_parts = profile.get("parts_ms_per_step", {})
        present = [n for n in names if n in parts]
        gpu = sum(parts[n]["gpu_ms"] for n in present)
        host = sum(parts[n]["host_ms"] for n in present)
        lines.append(
            _row(
                f"**{stage}** (alone: {profile.get('event_ms_per_step', '-')} ms on CUDA events, "
                f"host {profile['host_ms_per_step']} ms)",
                "",
                gpu,
                whole,
                profile["kernel_ms_per_step"],
                host,
            )
        )
        for name in present:
            p = parts[name]
            what = f"{stage}: {name}"
            if name == "replay":
                r = t["replay_ms"]
                what += f" (each {r['mean']:.3f} ms, {r['min']:.3f}-{r['max']:.3f})"
            lines.append(
                _row(
                    what, f"{p['count']:g}", p["gpu_ms"], whole, stage_parts.get(name), p["host_ms"]
                )
            )
        if on_gpu and "other" in stage_parts:
            lines.append(
                _row(
                    f"{stage}: kernels outside every part",
                    "",
                    None,
                    whole,
                    stage_parts["other"],
                    None,
                )
            )
    lines.append(
        _row(
            "outside every part (the host between parts)",
            "",
            t["outside_parts_ms"],
            whole,
            None,
            None,
        )
    )
    lines.append(
        f"| decode steps: {steps['replays']} replays x {STEPS_PER_CHECK} = {steps['steps_run']} "
        f"run ({steps['unchecked_replays']} before the first check); the longest utterance needed "
        f"{steps['steps_needed_most']} (mean {steps['steps_needed_mean']}): "
        f"{steps['steps_after_all_finished']} run after every utterance finished; "
        f"{100 * steps['row_steps_working_share']:.1f}% of the {steps['padded_batch']:,} rows' "
        "steps did work | | | | | |"
    )
    for stage in STAGES:
        for row in kernels[stage]["top"]:
            lines.append(
                _row(
                    f"{stage} kernel: {row['name']}",
                    row["calls_per_step"],
                    None,
                    whole,
                    row["gpu_ms_per_step"],
                    None,
                )
            )
    return lines


def table(records: Sequence[dict[str, Any]], on_gpu: bool = True) -> list[str]:
    """One table of every profiled batch: each part's GPU ms (CUDA events: kernels and gaps) and
    share of the call, its kernels' ms (profiler, the stage called alone), its host ms."""
    lines = [
        "| part | count a call | GPU ms (events) | share of call | kernel ms (profiler) | host ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for record in records:
        lines += batch_lines(record, on_gpu)
    return lines
