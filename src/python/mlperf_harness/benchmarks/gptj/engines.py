"""GPT-J's engine for a run's backend, made when the run starts: ONNX Runtime over the stand-in's
graph on the CPU; on a GPU, the torch engine (engines/torch_gptj)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mlperf_harness.benchmarks.gptj.session import OrtGptj
from mlperf_harness.benchmarks.gptj.stand_in_model import GptjShape
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.engine import DecoderEngine
from mlperf_harness.generation.step_engine import StepModelEngine


def gptj_engine_factory(
    backend: str,
    model: Path,
    stand_in_shape: GptjShape | None,
    *,
    slots: int,
    beams: int,
    max_length: int,
    eos_id: int,
    threads: int | None,
) -> Callable[[], DecoderEngine]:
    """A function that makes the engine (checked now: a wrong backend or model fails before the
    run starts)."""
    if backend == "onnxruntime":
        if stand_in_shape is None:
            raise HarnessError(
                f"{model} is GPT-J's checkpoint: it runs on the torch backend (a GPU, "
                "--backend torch); ONNX Runtime runs the stand-in"
            )
        graph = model.read_bytes()
        shape = stand_in_shape

        def onnxruntime_engine() -> DecoderEngine:
            session = OrtGptj(graph, shape, threads=threads or 0)
            return StepModelEngine(
                session, eos_id, slots=slots, beams=beams, max_length=max_length
            )

        return onnxruntime_engine
    raise HarnessError(
        f"gptj runs on --backend onnxruntime (the CPU stand-in) or torch (a GPU), not {backend}"
    )
