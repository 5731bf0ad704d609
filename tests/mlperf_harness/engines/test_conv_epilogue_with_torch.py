"""conv_epilogue_op on a CPU torch: the rewritten graph computes what the model does, torch.export
keeps each fused node as one mlperf_conv::conv2d_relu call, and the operators record lets a fresh
process load the program (as an AOTInductor package's proxy executor needs the operator
registered). cuDNN's fused form itself runs on GPU hosts only (conv_epilogue_ab.py times it and
checks its outputs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    import torch  # pants: no-infer-dep

    plain, fused = _modules()
    x = torch.randn(2, 8, 12, 12, generator=torch.Generator().manual_seed(3))
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        want, got = plain(x), fused(x)  # type: ignore[operator]
    for a, b in zip(want, got, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
    assert float(want[0].abs().max()) > 0  # something reached the output


_LOAD = """
import sys
import torch
from pathlib import Path
from mlperf_harness.engines.torch_aot import operators
engine = Path(sys.argv[1])
if sys.argv[2] == "register":
    operators.register_operators(engine)
program = torch.export.load(str(engine / "program.pt2"))
x = torch.load(str(engine / "x.pt"))
torch.testing.assert_close(program.module()(x)[0], torch.load(str(engine / "y.pt")))
print("loaded")
"""


def test_the_program_keeps_the_fused_calls_and_loads_where_its_record_registers_them(
    tmp_path: Path,
) -> None:
    import torch  # pants: no-infer-dep

    from mlperf_harness.engines.torch_aot import conv_epilogue_op, operators

    _, fused = _modules()
    x = torch.randn(1, 8, 12, 12)
    with torch.no_grad():
        program = torch.export.export(fused, (x,), strict=False)  # type: ignore[arg-type]
        y = fused(x)[0]  # type: ignore[operator]
    calls = [n for n in program.graph.nodes if "conv2d_relu" in str(n.target)]
    assert len(calls) == 3
    torch.export.save(program, str(tmp_path / "program.pt2"))
    torch.save(x, str(tmp_path / "x.pt"))
    torch.save(y, str(tmp_path / "y.pt"))
    operators.write_operators(tmp_path, program, (conv_epilogue_op.MODULE,))
    assert operators.custom_operators(program) == ["mlperf_conv::conv2d_relu"]

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def load(how: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", _LOAD, str(tmp_path), how]
        return subprocess.run(command, env=env, capture_output=True, text=True, check=False)

    assert load("register").stdout.strip() == "loaded"
    unregistered = load("no")
    assert unregistered.returncode != 0
    assert "conv2d_relu" in unregistered.stderr
