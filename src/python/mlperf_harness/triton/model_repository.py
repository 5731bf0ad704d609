"""The model repository that `serve --triton_runtime python_backend` gives the tritonserver binary:
one model, the benchmark's, whose config declares the tensors, batching and instances that the
PyTriton runtime declares through `Triton().bind(...)`, and whose model.py is backend_model.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mlperf_harness.atomic import write_json_atomic, write_text_atomic
from mlperf_harness.triton.backend_model import INSTANCE_GROUP, SPEC_PARAMETER
from mlperf_harness.triton.served_model import MODEL_VERSION

MODEL_FILE = "from mlperf_harness.triton.backend_model import TritonPythonModel  # noqa: F401\n"
SPEC_FILE = "instance_spec.json"

# Triton's data types by NumPy's (model_config.proto); object arrays hold bytes (BYTES).
_TRITON_TYPES = {
    "bool": "TYPE_BOOL",
    "uint8": "TYPE_UINT8",
    "uint16": "TYPE_UINT16",
    "uint32": "TYPE_UINT32",
    "uint64": "TYPE_UINT64",
    "int8": "TYPE_INT8",
    "int16": "TYPE_INT16",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "float16": "TYPE_FP16",
    "float32": "TYPE_FP32",
    "float64": "TYPE_FP64",
    "object": "TYPE_STRING",
}


def triton_type(dtype: np.dtype[Any]) -> str:
    try:
        return _TRITON_TYPES[np.dtype(dtype).name]
    except KeyError:
        raise ValueError(f"Triton has no tensor type for {dtype}") from None


def _tensor(spec: Any) -> str:
    optional = "\n    optional: true" if spec.optional else ""
    dims = ", ".join(str(size) for size in spec.shape)
    return (
        f'  {{\n    name: "{spec.name}"\n    data_type: {triton_type(spec.dtype)}\n'
        f"    dims: [ {dims} ]{optional}\n  }}"
    )


def model_config(
    name: str,
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    max_batch_size: int,
    queue_delay_us: int,
    instances: int,
    spec_path: Path,
) -> str:
    """config.pbtxt: `inputs` and `outputs` are serve.TensorSpec's; `instances`, one per device
    (backend_model.py). The instances are KIND_CPU: each picks its own GPU through its runners, as
    the direct harness's runners do. The model is decoupled: answered over streams only."""
    separator = ",\n"
    return (
        f'name: "{name}"\n'
        'backend: "python"\n'
        f"max_batch_size: {max_batch_size}\n"
        f"input [\n{separator.join(_tensor(spec) for spec in inputs)}\n]\n"
        f"output [\n{separator.join(_tensor(spec) for spec in outputs)}\n]\n"
        f'instance_group [\n  {{\n    name: "{INSTANCE_GROUP}"\n    count: {instances}\n'
        "    kind: KIND_CPU\n  }\n]\n"
        "model_transaction_policy {\n  decoupled: true\n}\n"
        "dynamic_batching {\n"
        f"  preferred_batch_size: [ {max_batch_size} ]\n"
        f"  max_queue_delay_microseconds: {queue_delay_us}\n"
        "}\n"
        f'parameters {{\n  key: "{SPEC_PARAMETER}"\n'
        f"  value: {{ string_value: {json.dumps(str(spec_path))} }}\n}}\n"
    )


def write_repository(workspace: Path, name: str, config_text: str, spec: dict[str, Any]) -> Path:
    """The repository under `workspace` (its path), with the spec each instance starts from."""
    repository = workspace / "models"
    write_text_atomic(repository / name / "config.pbtxt", config_text)
    write_text_atomic(repository / name / str(MODEL_VERSION) / "model.py", MODEL_FILE)
    write_json_atomic(workspace / SPEC_FILE, spec)
    return repository
