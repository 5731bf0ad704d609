"""What RetinaNet's torch engine compiles: the ONNX network (fp16, channels-last, through the
shared converter's EngineModule; or the FP8 engine's network, engines/torch_fp8) and, on its head
outputs in fp16, the GPU postprocessing: one module whose only output is each image's detections
(engine_detections.py's layout).

Imports torch: only the engine builder imports this module.
"""

from __future__ import annotations

from typing import Any

import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

from mlperf_harness.engines.torch_aot.torch_module import EngineModule
from mlperf_harness.engines.torch_retinanet.postprocess import GpuPostprocess


class RetinaNetEngine(torch.nn.Module):  # type: ignore[misc]
    """`network`: the ONNX network as an EngineModule (the fp16 or fp32 engine's, or the FP8
    engine's, whose input pass has already cast and laid out the batch), computing either the
    levels' head outputs concatenated or each level's box deltas and class logits
    (build.head_output_names)."""

    def __init__(self, network: EngineModule, classes: int, nms: str) -> None:
        super().__init__()
        self.network = network
        # Its own module, never cast: anchors and boxes stay float32 whatever the network computes in.
        self.postprocess = GpuPostprocess(classes, nms=nms)

    def forward(self, x: Any) -> tuple[Any]:
        outputs = self.network.graph_outputs(x)
        if len(outputs) == 1:  # the levels concatenated (build.head_output_names): views of it
            levels = self.postprocess.split(outputs[0])
        else:  # (boxes, logits) a level
            levels = list(zip(outputs[0::2], outputs[1::2], strict=True))
        return (self.postprocess.detections(levels),)
