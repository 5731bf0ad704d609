"""The FP8 engine's module (engines/torch_fp8/module.py) on RetinaNet's graph on the CPU, where every
FP8 convolution runs its CPU reference: the heads' weights held once for all pyramid levels, the
network's head outputs near the fp32 network's, and the engine's program (the network, then the
postprocessing) exported by torch.export giving what it gives eager. Skipped where torch or triton
is not installed (CI)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import pytest
from torch_needed import needs_torch_and_triton

from mlperf_harness.benchmarks.retinanet.anchors import ANCHORS_PER_POSITION, IMAGE_SIZE
from mlperf_harness.benchmarks.retinanet.detections import DETECTIONS_PER_IMAGE
from mlperf_harness.benchmarks.retinanet.stand_in import WIDTH
from mlperf_harness.benchmarks.retinanet.stand_in_model import (
    random_weights,
    retinanet_model,
)
from mlperf_harness.engines.calibration import Feed
from mlperf_harness.engines.torch_fp8 import calibrate, plan

pytestmark = needs_torch_and_triton

SIZE = 128  # the input's side: the FPN's levels 16 .. 1 pixels


@dataclass(frozen=True)
class _Images:
    """Calibration on a few random pictures (engines/calibration.py's protocol)."""

    images: npt.NDArray[np.float32]
    description: str = "random pictures"
    sha256: str = "0"

    def feeds(self, batch_size: int, input_names: Sequence[str]) -> list[Feed]:
        return [{input_names[0]: self.images}]


def _model(path: Path) -> Path:
    """The stand-in's topology with seeded weights, its final head convolutions random too (the
    stand-in fits them; zero they would hide the heads' error), any input size."""
    weights = random_weights(WIDTH, 0)
    rng = np.random.default_rng(1)
    for name in ("cls_logits", "bbox_pred"):
        shape = weights[f"{name}.weight"].shape
        fan_in = shape[1] * shape[2] * shape[3]
        weights[f"{name}.weight"] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(
            np.float32
        )
    model = retinanet_model(weights, WIDTH, "test", {})
    for dim in model.graph.input[0].type.tensor_type.shape.dim[2:]:
        dim.dim_param = "side"
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("logits_fp16", [False, True])
def test_the_fp8_network_holds_shared_weights_once_and_follows_fp32(
    tmp_path: Path, logits_fp16: bool
) -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    from mlperf_harness.benchmarks.retinanet import fp8_accuracy

    path = _model(tmp_path / "model.onnx")
    rng = np.random.default_rng(2)
    images = rng.random((2, 3, SIZE, SIZE), dtype=np.float32)
    fp16_convs = tuple(f"cls_logits_p{level}" for level in (3, 4, 5, 6, 7)) if logits_fp16 else ()
    model = onnx.load(str(path))
    amax = calibrate.activation_amax(
        path,
        plan.calibrated_tensors(model, fp16_convs),
        _Images(images),
        tmp_path / "amax.json",
    )
    network, planned = fp8_accuracy.fp8_network(path, amax, fp16_convs)
    # One e4m3 weight buffer per set of weights: 52 at this width (the heads' 10 shared by 5
    # levels), the class logits' 5 layers and their weights gone when kept in fp16.
    buffers = [name for name, _ in network.layers.named_buffers() if name[0] == "w"]
    assert len(planned.layers) == (87 if logits_fp16 else 92)
    assert len(buffers) == (51 if logits_fp16 else 52)
    reference = fp8_accuracy.plain_network(path, "fp32")
    x = torch.from_numpy(images)
    with torch.no_grad():
        (fp8,) = network(x)
        (fp32,) = reference(x)
    assert fp8.shape == fp32.shape == (2, ANCHORS_PER_POSITION * 341, 4 + WIDTH.classes)
    assert torch.isfinite(fp8).all()
    # Relative RMS error over every output: e4m3's 3 mantissa bits, quantized again at each of
    # the ~25 convolutions in a row; 0.090 and 0.095 measured (2026-11-29, torch 2.13 CPU).
    error = float((fp8 - fp32).norm() / fp32.norm())
    assert 0 < error < 0.15


def test_the_engine_s_program_network_and_postprocessing_exports_as_it_runs(
    tmp_path: Path,
) -> None:
    """What torch_retinanet/build.py exports for fp8 (the FP8 network's body computing each level's
    head outputs, then the GPU postprocessing; here its all-torch `rounds` NMS, on the CPU):
    torch.export takes it, and the program gives the detections the module does, bit for bit."""
    import torch  # pants: no-infer-dep

    from mlperf_harness.benchmarks.retinanet import fp8_accuracy
    from mlperf_harness.engines.torch_retinanet.build import head_output_names
    from mlperf_harness.engines.torch_retinanet.module import RetinaNetEngine

    path = _model(tmp_path / "model.onnx")
    model = onnx.load(str(path))
    amax = {name: 4.0 for name in plan.calibrated_tensors(model)}
    network, _ = fp8_accuracy.fp8_network(path, amax, (), head_output_names(model))
    body = RetinaNetEngine(network.engine, WIDTH.classes, "rounds").eval()
    torch.manual_seed(0)
    x = network.body_input(torch.rand(1, 3, IMAGE_SIZE, IMAGE_SIZE))
    with torch.no_grad():
        (detections,) = body(x)
        program = torch.export.export(body, (x,), strict=False)
        (exported,) = program.module()(x)
    assert detections.shape == (1, 1 + DETECTIONS_PER_IMAGE, 7)
    assert torch.equal(detections, exported)


def test_the_engine_on_each_levels_head_outputs_detects_as_on_their_concatenation(
    tmp_path: Path,
) -> None:
    """The network asked for each level's box deltas and class logits (build.head_output_names:
    the heads' concatenation left out of the engine) gives the engine the detections it gives
    on the concatenated output: the plain fp32 network and the FP8 one, eager on the CPU."""
    import torch  # pants: no-infer-dep

    from mlperf_harness.benchmarks.retinanet import fp8_accuracy
    from mlperf_harness.benchmarks.retinanet.stand_in_model import OUTPUT_NAME
    from mlperf_harness.engines.torch_aot import onnx_to_torch
    from mlperf_harness.engines.torch_aot.torch_module import EngineModule
    from mlperf_harness.engines.torch_retinanet.build import head_output_names
    from mlperf_harness.engines.torch_retinanet.module import RetinaNetEngine

    path = _model(tmp_path / "model.onnx")
    model = onnx_to_torch.load_model(path)
    names = head_output_names(model)
    assert len(names) == 10
    torch.manual_seed(0)
    x = torch.rand(1, 3, IMAGE_SIZE, IMAGE_SIZE)

    def plain(outputs: Sequence[str]) -> tuple[Any, Any]:
        graph = onnx_to_torch.to_torch_module(model, list(outputs))
        return EngineModule(graph, torch.float32, channels_last=True).eval(), x

    amax = {name: 4.0 for name in plan.calibrated_tensors(model)}

    def fp8(outputs: Sequence[str]) -> tuple[Any, Any]:
        network, _ = fp8_accuracy.fp8_network(path, amax, (), outputs)
        return network.engine, network.body_input(x)

    for make in (plain, fp8):
        detections = []
        for outputs in (names, (OUTPUT_NAME,)):
            network, given = make(outputs)
            engine = RetinaNetEngine(network, WIDTH.classes, "rounds").eval()
            with torch.no_grad():
                (found,) = engine(given)
            detections.append(found)
        assert detections[0][0, 0, 0] > 0  # some detections: the comparison means something
        assert torch.equal(detections[0], detections[1])


# A fresh process loads the saved program: it must register the custom operators itself.
_LOAD = """
import sys
from pathlib import Path
import torch
from mlperf_harness.engines.torch_fp8 import exported
engine = Path(sys.argv[1])
if sys.argv[2] == "register":
    exported.register_operators(engine)
else:  # the FP8 engine's operators only, as the loader imported before it read the record
    import importlib
    for module in exported.FP8_OPERATORS_MODULES:
        importlib.import_module(module)
torch.export.load(str(engine / exported.EXPORTED_FILE))
print("loaded")
"""


def test_the_saved_engine_names_what_registers_its_operators_and_loads_in_a_fresh_process(
    tmp_path: Path,
) -> None:
    """With the `scan` NMS the program calls mlperf_retinanet::greedy_keep beside mlperf_fp8's
    operators: exported.save records both and the modules that register them, and a process that
    imported none of them loads the file after register_operators, and not with the FP8 operators
    alone (the harness's first FP8 RetinaNet run on an H200 failed so, 2026-11-30)."""
    import os
    import subprocess
    import sys

    import torch  # pants: no-infer-dep

    from mlperf_harness.benchmarks.retinanet import fp8_accuracy
    from mlperf_harness.engines.torch_fp8 import exported
    from mlperf_harness.engines.torch_retinanet.build import (
        NMS_OPERATOR_MODULE,
        head_output_names,
    )
    from mlperf_harness.engines.torch_retinanet.module import RetinaNetEngine

    path = _model(tmp_path / "model.onnx")
    model = onnx.load(str(path))
    amax = {name: 4.0 for name in plan.calibrated_tensors(model)}
    network, _ = fp8_accuracy.fp8_network(path, amax, (), head_output_names(model))
    body = RetinaNetEngine(network.engine, WIDTH.classes, "scan").eval()
    x = network.body_input(torch.rand(1, 3, IMAGE_SIZE, IMAGE_SIZE))
    with torch.no_grad():
        program = torch.export.export(body, (x,), strict=False)
    engine = tmp_path / "engine"
    engine.mkdir()
    exported.save(program, engine, (NMS_OPERATOR_MODULE,))
    record = json.loads((engine / exported.OPERATORS_FILE).read_text())
    assert record["modules"] == [*exported.FP8_OPERATORS_MODULES, NMS_OPERATOR_MODULE]
    assert "mlperf_retinanet::greedy_keep" in record["operators"]
    # ResNeXt's grouped 3x3s stay fp16, with their bias and ReLU in cuDNN's epilogue (module.py).
    assert "mlperf_conv::conv2d_relu" in record["operators"]
    assert any(name.startswith("mlperf_fp8::") for name in record["operators"])

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def load(how: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", _LOAD, str(engine), how]
        return subprocess.run(command, env=env, capture_output=True, text=True, check=False)

    assert load("register").stdout.strip() == "loaded"
    unregistered = load("fp8 operators only")
    assert unregistered.returncode != 0
    assert "greedy_keep" in unregistered.stderr


def test_an_engine_whose_operator_no_module_registers_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    from mlperf_harness.engines.torch_fp8 import exported
    from mlperf_harness.errors import HarnessError

    (tmp_path / exported.OPERATORS_FILE).write_text(
        json.dumps({"modules": [*exported.FP8_OPERATORS_MODULES], "operators": ["mlperf_x::nms"]})
    )
    with pytest.raises(HarnessError, match="calls mlperf_x::nms, which none of the modules"):
        exported.register_operators(tmp_path)
    (tmp_path / exported.OPERATORS_FILE).unlink()
    with pytest.raises(HarnessError, match="is missing: the engine was built before"):
        exported.register_operators(tmp_path)


def test_an_unreadable_operators_record_is_one_line(tmp_path: Path) -> None:
    from mlperf_harness.engines.torch_fp8 import exported
    from mlperf_harness.errors import HarnessError

    (tmp_path / exported.OPERATORS_FILE).write_text("{not json")
    with pytest.raises(HarnessError, match=r"operators\.json is not JSON"):
        exported.register_operators(tmp_path)
