"""Backend names -> runner factories. Factories import their backend lazily so heavy optional
libraries (onnxruntime, torch, tensorrt) load only when that backend is chosen.

A factory returns the runners of one run, one per harness worker: a CPU backend one runner listed
`worker_count` times (its threads share one session), the torch backend its own runner for every
GPU and stream, the sim backend one for every simulated GPU and stream."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.names import BACKEND_NAMES
from mlperf_harness.config.fields import HarnessSettings
from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.settings import Scenario


@dataclass(frozen=True)
class BackendOptions:
    """What a benchmark and the run's settings tell any backend."""

    model_path: Path | None = None  # the model, or the engine built from it
    # Further engines of other batch sizes (torch: the runner picks the smallest that fits).
    extra_engine_paths: tuple[Path, ...] = ()
    output_name: str | None = None
    # A model of several inputs (BERT: input_ids, input_mask, segment_ids) gets each sample as one
    # row holding them side by side, in this order and of equal width; empty: one input, the row.
    packed_inputs: tuple[str, ...] = ()
    # Several outputs answered as one: stacked on a new last axis (BERT's start and end logits
    # -> [seq, 2] per sample, the layout its accuracy log holds). Empty: `output_name` alone.
    stacked_outputs: tuple[str, ...] = ()
    intra_op_threads: int | None = None
    worker_count: int | None = None  # CPU backends: threads sharing the runner
    gpu_inference_streams: int | None = None  # GPU backends: runners per GPU
    start_from_device: bool | None = None
    batch_size: int | None = None  # the harness's batches: runners size buffers and graphs by it
    # torch: BERT's engine, run per sequence-length bucket (these lengths, ascending, the last the
    # full one) instead of one AOTInductor package per batch size.
    length_buckets: tuple[int, ...] = ()
    # torch: each sample is a whole volume the engine sees in 128³ windows (3D-UNet): the volume
    # runner blends the windows and takes the argmax on the GPU.
    volume_windows: bool = False
    # sim: simulated GPUs and the table of their batch times (backends/sim).
    sim_gpus: int | None = None
    sim_latency_table: str | None = None
    # A benchmark's own runners, where its samples are not one model input each (DLRM-v2: a sample
    # is a user's group of pairs, its model takes two inputs): called with the backend's name and
    # these options in place of the backend's factory. None: the backend's.
    runner_factory: Callable[[str, BackendOptions], list[Runner]] | None = None


def _null(options: BackendOptions) -> list[Runner]:
    from mlperf_harness.backends.null.runner import NullRunner

    return [NullRunner()] * (options.worker_count or 1)


def _onnxruntime(options: BackendOptions) -> list[Runner]:
    from mlperf_harness.backends.onnxruntime.runner import OnnxRuntimeRunner

    if options.model_path is None:
        raise HarnessError("the onnxruntime backend needs a model (--model_path)")
    runner = OnnxRuntimeRunner(
        options.model_path,
        options.output_name,
        options.intra_op_threads,
        packed_inputs=options.packed_inputs,
        stacked_outputs=options.stacked_outputs,
    )
    return [runner] * (options.worker_count or 1)


def _tensorrt(options: BackendOptions) -> list[Runner]:
    from mlperf_harness.backends.tensorrt.runner import TensorRTRunner

    if options.model_path is None:
        raise HarnessError("the tensorrt backend needs an engine (generate_engines builds it)")
    return [TensorRTRunner(options.model_path, options.output_name)]


def _torch(options: BackendOptions) -> list[Runner]:
    from mlperf_harness.backends.torch_cuda.runner import torch_runners

    if options.model_path is None:
        raise HarnessError(
            "the torch backend needs an engine (a .pt2 that generate_engines builds)"
        )
    if options.volume_windows:
        from mlperf_harness.backends.torch_cuda.volume_runner import volume_runners

        return volume_runners(
            (options.model_path, *options.extra_engine_paths),
            streams_per_gpu=options.gpu_inference_streams or 1,
            start_from_device=bool(options.start_from_device),
        )
    if options.length_buckets:
        from mlperf_harness.backends.torch_cuda.bert_runner import bert_runners

        return bert_runners(
            options.model_path,
            buckets=options.length_buckets,
            batch_size=options.batch_size or 1,
            streams_per_gpu=options.gpu_inference_streams or 1,
            start_from_device=bool(options.start_from_device),
        )
    return torch_runners(
        (options.model_path, *options.extra_engine_paths),
        options.output_name,
        streams_per_gpu=options.gpu_inference_streams or 1,
        start_from_device=bool(options.start_from_device),
    )


def _sim(options: BackendOptions) -> list[Runner]:
    from mlperf_harness.backends.sim.runner import sim_runners
    from mlperf_harness.backends.sim.table import load_table

    if options.sim_latency_table is None:
        raise HarnessError("the sim backend needs a latency table (--sim_latency_table)")
    return sim_runners(
        load_table(options.sim_latency_table),
        gpus=options.sim_gpus or 1,
        streams_per_gpu=options.gpu_inference_streams or 1,
    )


_FACTORIES: dict[str, Callable[[BackendOptions], list[Runner]]] = {
    "null": _null,
    "onnxruntime": _onnxruntime,
    "sim": _sim,
    "tensorrt": _tensorrt,
    "torch": _torch,
}
# Backends that run no model: a benchmark builds no engine for them.
WITHOUT_ENGINE = frozenset({"null", "sim"})
# Backends whose runners do no work: nothing to time at a run's start (config/measured_rates.py);
# the harness itself is their limit, so their rates come from a config or the flags.
NO_WORK = frozenset({"null"})


def backend_names() -> Sequence[str]:
    return BACKEND_NAMES


def check_backend_name(name: str) -> str:
    if name not in _FACTORIES:
        raise HarnessError(f"unknown backend {name!r}: choose one of {', '.join(backend_names())}")
    return name


def settings_layer(
    name: str, benchmark: str, scenario: Scenario, settings: HarnessSettings
) -> tuple[HarnessSettings, str] | None:
    """A backend's own config layer (above the machine's config, below the flags), with its
    source label, or None. `settings`: the run's so far, flags included. The sim backend runs as
    its latency table's reference system would (backends/sim/settings.py)."""
    if name != "sim":
        return None
    from mlperf_harness.backends.sim.settings import sim_settings_layer

    return sim_settings_layer(benchmark, scenario, settings)


def create_runners(name: str, options: BackendOptions) -> list[Runner]:
    """The runners of one run, one per harness worker (the same runner may be listed repeatedly)."""
    if options.runner_factory is not None:
        return options.runner_factory(check_backend_name(name), options)
    return _FACTORIES[check_backend_name(name)](options)
