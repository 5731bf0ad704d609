"""Check that a model file is a usable ONNX model before anything builds from it.

A broken file otherwise surfaces deep inside a builder as a traceback: ONNX Runtime reads a 0-byte
or cut-off file as a model with "No graph", and refuses a too new IR version with a C++ location.
Here each is one line naming the file and what is wrong with it.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from mlperf_harness.errors import HarnessError


def read_model_header(path: Path) -> onnx.ModelProto:
    """The model's graph and metadata (not its external weights), or a HarnessError naming the
    file and what is wrong with it."""
    try:
        size = path.stat().st_size
        if size == 0:
            raise HarnessError(f"model {path} is empty (0 bytes); download or export it again")
        model = onnx.load(str(path), load_external_data=False)
    except HarnessError:
        raise
    except OSError as error:
        raise HarnessError(f"cannot read model {path}: {error.strerror or error}") from error
    except Exception as error:  # protobuf's DecodeError and others: not a model, or cut off
        raise HarnessError(
            f"model {path} is not an ONNX model, or a corrupt or truncated one ({size} bytes; "
            f"{type(error).__name__}); download or export it again"
        ) from error
    if not model.graph.node or not model.graph.input or not model.opset_import:
        # A file cut off early can still parse: as a model without a graph.
        raise HarnessError(
            f"model {path} holds no ONNX graph ({size} bytes; truncated, or not an ONNX model); "
            "download or export it again"
        )
    if model.ir_version > onnx.IR_VERSION:
        raise HarnessError(
            f"model {path} has ONNX IR version {model.ir_version}, newer than this harness reads "
            f"(up to {onnx.IR_VERSION}); export it with an older IR version"
        )
    return model
