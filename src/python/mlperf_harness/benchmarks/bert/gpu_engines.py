"""BERT on the torch backend: its engine (the encoder's weights in fp16, built once into the engine
cache from the ONNX model) and what the runner is told (run per sequence-length bucket).

The buckets are NVIDIA's idea for BERT on GPUs: most SQuAD features are far shorter than 384 tokens,
and a sample computed at the smallest bucket holding its real length gives the same logits there.
"""

from __future__ import annotations

from pathlib import Path

from mlperf_harness.backends.torch_cuda.length_buckets import DEFAULT_BUCKETS
from mlperf_harness.benchmarks.bert import configs
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.torch_bert.engine import bert_engine, bert_engine_spec

LENGTH_BUCKETS = DEFAULT_BUCKETS  # 128, 192, 256, 320, 384 tokens


def bert_torch_engine(
    model_path: Path, model_sha256: str, precision: str, engine_root: Path
) -> tuple[Path, bool]:
    """(engine file, whether it was built now) for the model at `model_path`."""
    spec = bert_engine_spec(configs.NAME, model_sha256, precision)
    return bert_engine(EngineCache(engine_root), spec, model_path)
