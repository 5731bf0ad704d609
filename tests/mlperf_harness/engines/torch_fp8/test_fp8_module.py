"""The FP8 engine as a torch module on the CPU (engines/torch_fp8/module.py), where every operator
runs its CPU reference: the stem's node runs fused or unfused as its configuration says, and the
configurations must match the plan. Skipped where torch or triton is not installed (CI)."""

from __future__ import annotations

import pytest
from fp8_graphs import bottleneck_graph
from torch_needed import needs_torch_and_triton

from mlperf_harness.engines.torch_fp8 import plan
from mlperf_harness.errors import HarnessError

pytestmark = needs_torch_and_triton


def _planned() -> plan.Fp8Plan:
    model = bottleneck_graph()
    amax = {name: 2.0 + i for i, name in enumerate(plan.calibrated_tensors(model))}
    return plan.plan_fp8(model, amax)


def test_the_stem_runs_fused_or_unfused_as_configured_with_the_same_result() -> None:
    import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

    from mlperf_harness.engines.torch_fp8 import module, ops, tuning

    planned = _planned()
    assert len(planned.stems) == 1
    torch.manual_seed(0)
    x = torch.randn(2, 3, 32, 32)
    convs = [tuning.CANDIDATES[2]] * len(planned.layers)
    outputs = []
    for stems in (None, [ops.UNFUSED_STEM], [tuning.STEM_CANDIDATES[1]]):
        engine = module.Fp8EngineModule(planned, convs, stem_configs=stems).eval()
        with torch.no_grad():
            (logits,) = engine(x)
        # The stem's node saw the input as the input pass wrote it: padded to 4 channels.
        assert engine.layers.stem_input_shapes == {0: (2, plan.INPUT_CHANNELS, 32, 32)}
        outputs.append(logits)
    assert torch.equal(outputs[0], outputs[1])  # none given: unfused
    # Fused, the bias is added before one rounding to fp16 where the unfused path rounds the
    # convolution's output first: the pooled e4m3 values may differ by a step, no more.
    scale = float(outputs[0].abs().max())
    assert float((outputs[2] - outputs[0]).abs().max()) < 0.02 * scale


def test_stem_configurations_must_match_the_plan() -> None:
    from mlperf_harness.engines.torch_fp8 import module, ops, tuning

    planned = _planned()
    convs = [tuning.CANDIDATES[2]] * len(planned.layers)
    with pytest.raises(HarnessError, match="2 stem configurations for 1 stems"):
        module.Fp8EngineModule(planned, convs, stem_configs=[ops.UNFUSED_STEM] * 2)
