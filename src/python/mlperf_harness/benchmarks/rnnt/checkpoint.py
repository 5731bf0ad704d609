"""The published RNN-T checkpoint (`rnnt.pt`, a PyTorch pickle whose `state_dict` holds the model)
read into weights under the reference's names (topology.py), and written as this harness's model
directory (model_files.py). Reading it needs torch (imported here only); the layout is checked name
for name and shape for shape, anything else refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlperf_harness.benchmarks.rnnt.model_files import RnntModelFiles, write_model_files
from mlperf_harness.benchmarks.rnnt.onnx_graphs import rnnt_models
from mlperf_harness.benchmarks.rnnt.topology import RnntSizes, migrate_checkpoint_names, sizes_of
from mlperf_harness.benchmarks.rnnt.weights import Weights
from mlperf_harness.errors import HarnessError


def read_checkpoint(path: Path) -> tuple[Weights, RnntSizes]:
    try:
        import torch  # type: ignore[import-not-found]  # pants: no-infer-dep
    except ImportError:
        raise HarnessError(
            f"reading {path} needs torch (a PyTorch pickle): install torch, or convert it where "
            "torch is installed (download_model --convert) and copy the model directory"
        ) from None
    try:
        checkpoint = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as error:  # torch's unpickling errors have no common type
        raise HarnessError(f"{path} is not a readable PyTorch checkpoint: {error}") from None
    state = checkpoint.get("state_dict", checkpoint) if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise HarnessError(f"{path} holds no state dict (MLCommons' rnnt.pt has 'state_dict')")
    migrated = migrate_checkpoint_names(state)
    shapes = {
        name: tuple(value.shape) for name, value in migrated.items() if hasattr(value, "shape")
    }
    sizes = sizes_of(shapes, str(path))
    weights = {
        name: np.ascontiguousarray(value.detach().float().cpu().numpy())  # type: ignore[attr-defined]
        for name, value in migrated.items()
    }
    return weights, sizes


def convert_checkpoint(path: Path, model_dir: Path) -> RnntModelFiles:
    weights, sizes = read_checkpoint(path)
    doc = f"MLCommons' RNN-T checkpoint {path.name} as three ONNX graphs (mlperf_harness)"
    return write_model_files(
        model_dir, rnnt_models(weights, sizes, doc, {}), weights, sizes, stand_in=False, note=doc
    )
