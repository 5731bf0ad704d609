"""Run an ONNX model with ONNX Runtime's CPU execution provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.errors import HarnessError


class OnnxRuntimeRunner(Runner):
    name = "onnxruntime"

    def __init__(
        self, model_path: Path, output_name: str | None = None, intra_op_threads: int | None = None
    ) -> None:
        self._model_path = model_path
        self._output_name = output_name
        self._intra_op_threads = intra_op_threads
        self._session: Any = None
        self._input_name = ""

    def activate(self) -> None:
        # Imported here so that other backends never pay for (or need) onnxruntime.
        import onnxruntime as ort

        if not self._model_path.is_file():
            raise HarnessError(f"model not found: {self._model_path}")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self._intra_op_threads:
            options.intra_op_num_threads = self._intra_op_threads
        try:
            self._session = ort.InferenceSession(
                str(self._model_path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # ORT raises its own exception types for every kind of bad file
            first_line = (
                str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            )
            raise HarnessError(
                f"onnxruntime cannot load {self._model_path}: {first_line}"
            ) from error
        self._input_name = self._session.get_inputs()[0].name
        outputs = [output.name for output in self._session.get_outputs()]
        if self._output_name is not None and self._output_name not in outputs:
            raise HarnessError(
                f"{self._model_path} has no output {self._output_name!r} (it has {', '.join(outputs)})"
            )

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        output_names = None if self._output_name is None else [self._output_name]
        result: npt.NDArray[np.generic] = self._session.run(
            output_names, {self._input_name: batch}
        )[0]
        return result

    def deactivate(self) -> None:
        self._session = None
