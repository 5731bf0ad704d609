"""conv_epilogue_op on a CPU torch: the rewritten graph computes what the model does, and
torch.export keeps each fused node as one mlperf_conv::conv2d_relu call (the FP8 engine's program
calls it so; test_fp8_retinanet_module.py loads such a program in a fresh process). cuDNN's fused
form itself runs on GPU hosts only (conv_epilogue_ab.py times it and checks its outputs)."""

from __future__ import annotations

import pytest
from conv_epilogue_graphs import residual_model
from torch_needed import needs_torch

from mlperf_harness.engines.torch_aot.conv_epilogue import fuse_conv_epilogues

pytestmark = needs_torch


def _modules() -> tuple[object, object]:
    from mlperf_harness.engines.torch_aot import conv_epilogue_op
    from mlperf_harness.engines.torch_aot.torch_module import OnnxGraphModule

    model = residual_model()
    fused, count = fuse_conv_epilogues(model)
    assert count == 3
    plain = OnnxGraphModule(model).eval()
    return plain, OnnxGraphModule(fused, extra_handlers=conv_epilogue_op.HANDLERS).eval()


@pytest.mark.parametrize("channels_last", [False, True])
def test_the_fused_graph_computes_what_the_model_does(channels_last: bool) -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    plain, fused = _modules()
    x = torch.randn(2, 8, 12, 12, generator=torch.Generator().manual_seed(3))
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        want, got = plain(x), fused(x)  # type: ignore[operator]
    for a, b in zip(want, got, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
        assert b.is_contiguous(memory_format=torch.channels_last) == channels_last
    assert float(want[0].abs().max()) > 0  # something reached the output


def test_the_exported_program_keeps_one_call_per_fused_convolution() -> None:
    import torch  # pants: no-infer-dep

    _, fused = _modules()
    x = torch.randn(1, 8, 12, 12)
    with torch.no_grad():
        program = torch.export.export(fused, (x,), strict=False)
        torch.testing.assert_close(program.module()(x)[0], fused(x)[0])  # type: ignore[operator]
    calls = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert sum("conv2d_relu" in call for call in calls) == 3
    # Only the three ReLUs after a convolution the rewrite leaves (d, e, f) remain ATen's.
    assert sum(call.startswith("aten.relu") for call in calls) == 3
