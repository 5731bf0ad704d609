"""The BERT encoder on the CPU where torch is installed: each fusion against ONNX Runtime on the
model the engine was built from, and the varlen path (real tokens concatenated, attention bounded
per sequence) against the padded one.

torch is no dependency of the CPU build, so in CI these tests are skipped; GPU hosts and any
environment with torch run them. On a GPU the varlen path runs FlashAttention's variable-length
kernel instead of this per-sequence reference: `bert.torch_raw --onnx` checks it there.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from torch_needed import needs_torch

from mlperf_harness.backends.onnxruntime.runner import OnnxRuntimeRunner
from mlperf_harness.backends.torch_cuda.varlen_batches import plan_varlen, token_offsets
from mlperf_harness.benchmarks.bert.stand_in_model import (
    INPUT_NAMES,
    OUTPUT_NAMES,
    BertShape,
    random_weights,
    span_model,
)
from mlperf_harness.engines.torch_bert.engine import read_engine, write_engine
from mlperf_harness.engines.torch_bert.module import (
    DEFAULT_FUSION,
    FUSIONS,
    SEQ_LENGTH,
    BertEncoder,
)

pytestmark = needs_torch
SHAPE = BertShape(layers=2, hidden=64, heads=2, intermediate=96, vocab_size=50)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bert")
    model = directory / "model.onnx"
    weights = random_weights(SHAPE, seed=3)
    # The stand-in's recipe damps what attention and positions add, and its span head is zero
    # until fitted: undamped, every token's logits depend on its position and on the whole
    # sequence, so a token gathered, placed or bounded wrongly shows.
    rng = np.random.default_rng(3)
    for name, array in weights.items():
        if name.endswith(("output/weight", "ffn/out/weight", "span/weight")):
            weights[name] = rng.standard_normal(array.shape, dtype=np.float32) / np.float32(
                np.sqrt(len(array))
            )
        elif name == "embeddings/position":
            weights[name] = rng.standard_normal(array.shape, dtype=np.float32)
        elif name.endswith(("bias", "beta")):  # zero in the recipe; bias folding moves them
            weights[name] = rng.standard_normal(array.shape, dtype=np.float32) * 0.5
    onnx.save(span_model(weights, SHAPE, 4, {}), str(model))
    return model


def _encoder(model: Path, fusion: str = DEFAULT_FUSION) -> BertEncoder:
    torch = importlib.import_module("torch")
    header, arrays = read_engine(model.parent / write_engine(model, model.parent, "fp32"))
    return BertEncoder(torch, header, arrays, torch.device("cpu"), fusion)


@pytest.fixture(scope="module")
def encoder(model_file: Path) -> BertEncoder:
    return _encoder(model_file)


def _rows(lengths: list[int]) -> Any:
    rng = np.random.default_rng(1)
    rows = np.zeros((len(lengths), 3 * SEQ_LENGTH), dtype=np.int32)
    for i, length in enumerate(lengths):
        rows[i, :length] = rng.integers(1, SHAPE.vocab_size, length)
        rows[i, SEQ_LENGTH : SEQ_LENGTH + length] = 1
        rows[i, 2 * SEQ_LENGTH + length // 2 : 2 * SEQ_LENGTH + length] = 1  # the span's segment
    return rows


@pytest.mark.parametrize("fusion", FUSIONS)
def test_each_fusion_answers_as_onnx_runtime(model_file: Path, fusion: str) -> None:
    torch = importlib.import_module("torch")
    lengths = [5, 40, 17, 1, 64]
    rows = _rows(lengths)
    with torch.no_grad():
        ours = _encoder(model_file, fusion)(torch.from_numpy(rows), 64).numpy()
    with OnnxRuntimeRunner(
        model_file, packed_inputs=INPUT_NAMES, stacked_outputs=OUTPUT_NAMES
    ) as reference:
        expected = np.asarray(reference.infer(rows.astype(np.int64)), dtype=np.float32)
    for i, length in enumerate(lengths):
        np.testing.assert_allclose(ours[i, :length], expected[i, :length], rtol=1e-3, atol=1e-3)


def test_varlen_logits_equal_the_padded_ones_at_every_real_token(encoder: BertEncoder) -> None:
    torch = importlib.import_module("torch")
    lengths = [5, 40, 17, 1, 64]
    rows = _rows(lengths)
    with torch.no_grad():
        padded = encoder(torch.from_numpy(rows), 64).numpy()
    (call,) = plan_varlen(np.array(lengths))
    offsets = token_offsets(call)
    order = np.repeat(call.positions, np.diff(call.cu_seqlens))
    ids = torch.from_numpy(rows[order, offsets])
    segments = torch.from_numpy(rows[order, 2 * SEQ_LENGTH + offsets])
    with torch.no_grad():
        varlen = encoder.varlen(
            ids,
            segments,
            torch.from_numpy(offsets.astype(np.int32)),
            torch.from_numpy(call.cu_seqlens),
            call.max_length,
        ).numpy()
    assert varlen.shape == (sum(lengths), 2)
    np.testing.assert_allclose(varlen, padded[order, offsets], rtol=1e-4, atol=1e-4)
