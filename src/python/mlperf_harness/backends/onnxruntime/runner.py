"""Run an ONNX model with ONNX Runtime's CPU execution provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.backends.base import Runner
from mlperf_harness.backends.onnxruntime.session import cpu_session
from mlperf_harness.errors import HarnessError


class OnnxRuntimeRunner(Runner):
    name = "onnxruntime"

    def __init__(
        self,
        model_path: Path,
        output_name: str | None = None,
        intra_op_threads: int | None = None,
        *,
        packed_inputs: tuple[str, ...] = (),
        stacked_outputs: tuple[str, ...] = (),
    ) -> None:
        """`packed_inputs`, `stacked_outputs`: see BackendOptions."""
        self._model_path = model_path
        self._intra_op_threads = intra_op_threads
        self._session: Any = None
        self._inputs: list[tuple[str, Any]] = []  # (name, numpy dtype) per packed slice
        self._packed = packed_inputs
        self._outputs = list(stacked_outputs) or ([output_name] if output_name else [])

    def activate(self) -> None:
        if not self._model_path.is_file():
            raise HarnessError(f"model not found: {self._model_path}")
        self._session = cpu_session(self._model_path, self._intra_op_threads, quiet=False)
        declared = {node.name: node.type for node in self._session.get_inputs()}
        names = self._packed or (next(iter(declared)),)
        missing = [name for name in names if name not in declared]
        if missing:
            raise HarnessError(
                f"{self._model_path} has no input {missing[0]!r} (it has {', '.join(declared)})"
            )
        # A single input takes the batch as it is; packed slices are cast to what each input takes.
        self._inputs = [
            (name, _numpy_type(declared[name]) if self._packed else None) for name in names
        ]
        outputs = [output.name for output in self._session.get_outputs()]
        for name in self._outputs:
            if name not in outputs:
                raise HarnessError(
                    f"{self._model_path} has no output {name!r} (it has {', '.join(outputs)})"
                )

    def infer(self, batch: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        if self._packed:
            slices = np.split(batch.reshape(len(batch), -1), len(self._inputs), axis=1)
            feeds = {
                name: np.ascontiguousarray(part, dtype=dtype)
                for (name, dtype), part in zip(self._inputs, slices, strict=True)
            }
        else:
            feeds = {self._inputs[0][0]: batch}
        results = self._session.run(self._outputs or None, feeds)
        if len(self._outputs) > 1:
            return np.stack(results, axis=-1)
        first: npt.NDArray[np.generic] = results[0]
        return first

    def deactivate(self) -> None:
        self._session = None


# ONNX Runtime's names for the input types a packed row is cast to.
_NUMPY_TYPES = {
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
}


def _numpy_type(onnx_type: str) -> Any:
    try:
        return _NUMPY_TYPES[onnx_type]
    except KeyError:
        raise HarnessError(f"an input of type {onnx_type} is not supported here") from None
