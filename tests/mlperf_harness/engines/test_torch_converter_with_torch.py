"""The ONNX -> torch converter against ONNX Runtime, on the CPU, where torch is installed.

torch is no dependency of the CPU build, so on such hosts (and in CI) these tests are skipped; GPU
hosts and any environment with torch run them. The GPU engine itself is checked by
engines/torch_aot/device_check.py (docs/torch_engine.md).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]
import pytest
from torch_needed import needs_torch

from mlperf_harness.engines.torch_aot import onnx_to_torch, sample_graphs

# Collected and skipped (not an empty module, which pytest reports as exit code 5) without torch.
pytestmark = needs_torch


@pytest.fixture(scope="module")
def torch() -> Any:
    return importlib.import_module("torch")


def _reference(model: onnx.ModelProto, x: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(list(sample_graphs.OUTPUTS), {sample_graphs.INPUT_NAME: x}))


def test_every_supported_operator_has_a_handler() -> None:
    from mlperf_harness.engines.torch_aot import torch_module

    assert set(torch_module.HANDLERS) | {"Constant"} == onnx_to_torch.SUPPORTED_OPS


@pytest.mark.parametrize("rewritten", [False, True])
@pytest.mark.parametrize("opset", sample_graphs.OPSETS)
def test_converted_graph_matches_onnxruntime(torch: Any, opset: int, rewritten: bool) -> None:
    """The graph as given, and as the engines build it (batch norms folded, SAME padding made
    explicit, zero Pads folded: onnx_to_torch.rewritten), against ONNX Runtime on the graph as
    given: the rewrites change nothing it computes."""
    given = sample_graphs.coverage_graph(opset, seed=opset)
    model = onnx_to_torch.rewritten(given) if rewritten else given
    x = sample_graphs.random_input(16, seed=opset)
    ref_prob, ref_label = _reference(given, x)
    module = onnx_to_torch.to_torch_module(model).eval()
    with torch.no_grad():
        prob, label = module(torch.from_numpy(x))
    np.testing.assert_allclose(prob.numpy(), ref_prob, rtol=1e-5, atol=2e-6)
    np.testing.assert_array_equal(label.numpy(), ref_label)


def test_only_the_requested_outputs_are_computed(torch: Any) -> None:
    model = sample_graphs.coverage_graph(13)
    module = onnx_to_torch.to_torch_module(model, ["label"])
    assert not any(step.label.startswith("Softmax") for step in module._steps)
    with torch.no_grad():
        (label,) = module(torch.from_numpy(sample_graphs.random_input(4, seed=1)))
    assert label.dtype == torch.int64 and label.shape == (4,)
    with pytest.raises(Exception, match="computes no 'logits_missing'"):
        onnx_to_torch.to_torch_module(model, ["logits_missing"])


def test_engine_module_exports_to_one_graph_in_low_precision(torch: Any) -> None:
    from mlperf_harness.engines.torch_aot import torch_module

    model = onnx_to_torch.fold_batch_norms(sample_graphs.coverage_graph(11, seed=11))[0]
    x = sample_graphs.random_input(16, seed=11)
    ref_prob, ref_label = _reference(model, x)
    graph = onnx_to_torch.to_torch_module(model)
    engine = torch_module.EngineModule(graph, torch.bfloat16, channels_last=True).eval()
    example = torch.from_numpy(x)
    with torch.no_grad():
        exported = torch.export.export(engine, (example,), strict=False)
        prob, label = exported.module()(example)
    assert prob.dtype == torch.float32  # float outputs come back in fp32
    targets = [str(node.target) for node in exported.graph.nodes if node.op == "call_function"]
    assert targets.count("aten.conv2d.default") == 2
    assert sum("batch_norm" in target for target in targets) == 1  # two were folded
    np.testing.assert_allclose(prob.numpy(), ref_prob, atol=0.05)  # bf16: ~1e-2
    assert np.mean(label.numpy() == ref_label) >= 0.8
