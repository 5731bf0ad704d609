"""One way to open an ONNX model on ONNX Runtime's CPU provider: graph optimizations on, its own
warnings quiet, and a file it cannot load refused in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def cpu_session(
    model: Path | bytes, intra_op_threads: int | None = None, *, quiet: bool = True
) -> Any:
    """An InferenceSession of a model file or a serialized model. `quiet`: only ORT's errors."""
    # Imported here so that other backends never pay for (or need) onnxruntime.
    import onnxruntime as ort

    from mlperf_harness.errors import HarnessError

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if quiet:
        options.log_severity_level = 3
    if intra_op_threads:
        options.intra_op_num_threads = intra_op_threads
    source = str(model) if isinstance(model, Path) else model
    try:
        return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    except Exception as error:  # ORT raises its own exception types for every kind of bad file
        first_line = (
            str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        )
        what = model if isinstance(model, Path) else "the model"
        raise HarnessError(f"onnxruntime cannot load {what}: {first_line}") from error
