"""The torch BERT engine's weights: read from our stand-in's ONNX and from the TensorFlow names the
official model's weights carry, written into the engine cache and read back. (The encoder itself
needs a GPU: the device script checks its logits against ONNX Runtime.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import pytest

from mlperf_harness.benchmarks.bert.stand_in_model import BertShape, random_weights, span_model
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.torch_bert.engine import bert_engine, bert_engine_spec, read_engine
from mlperf_harness.engines.torch_bert.weights import read_bert_weights
from mlperf_harness.errors import HarnessError

SHAPE = BertShape(layers=2, hidden=64, heads=2, intermediate=96, vocab_size=50)


@pytest.fixture(scope="module")
def weights() -> dict[str, npt.NDArray[Any]]:
    drawn = random_weights(SHAPE, seed=4)
    drawn["span/weight"] = np.arange(SHAPE.hidden * 2, dtype=np.float32).reshape(SHAPE.hidden, 2)
    return drawn


@pytest.fixture(scope="module")
def model_file(
    tmp_path_factory: pytest.TempPathFactory, weights: dict[str, npt.NDArray[Any]]
) -> Path:
    path = tmp_path_factory.mktemp("bert") / "model.onnx"
    onnx.save(span_model(weights, SHAPE, 4, {}), str(path))
    return path


def test_reads_every_weight_of_the_stand_in(
    model_file: Path, weights: dict[str, npt.NDArray[Any]]
) -> None:
    read = read_bert_weights(model_file)
    assert (read.layers, read.hidden, read.heads, read.intermediate) == (2, 64, 2, 96)
    assert set(read.arrays) == set(weights)
    for name, array in weights.items():
        np.testing.assert_array_equal(read.arrays[name], array)


def _tensorflow_name(ours: str) -> str:
    table = {
        "embeddings/word": "bert/embeddings/word_embeddings",
        "embeddings/position": "bert/embeddings/position_embeddings",
        "embeddings/token_type": "bert/embeddings/token_type_embeddings",
        "embeddings/ln/gamma": "bert/embeddings/LayerNorm/gamma",
        "embeddings/ln/beta": "bert/embeddings/LayerNorm/beta",
        "span/weight": "cls/squad/output_weights",
        "span/bias": "cls/squad/output_bias",
    }
    if ours in table:
        return table[ours] + ":0"
    layer, rest = ours.split("/", 1)
    per_layer = {
        "attention/query/weight": "attention/self/query/kernel",
        "attention/output/weight": "attention/output/dense/kernel",
        "attention/ln/gamma": "attention/output/LayerNorm/gamma",
        "ffn/in/bias": "intermediate/dense/bias",
        "ffn/out/weight": "output/dense/kernel",
        "ffn/ln/beta": "output/LayerNorm/beta",
    }
    name = per_layer.get(rest) or (
        rest.replace("attention/", "attention/self/")
        .replace("/weight", "/kernel")
        .replace("attention/self/output/bias", "attention/output/dense/bias")
        .replace("attention/self/ln/beta", "attention/output/LayerNorm/beta")
        .replace("ffn/in/kernel", "intermediate/dense/kernel")
        .replace("ffn/out/bias", "output/dense/bias")
        .replace("ffn/ln/gamma", "output/LayerNorm/gamma")
    )
    return f"bert/encoder/layer_{layer.removeprefix('layer')}/{name}"


def test_reads_the_tensorflow_layout(
    tmp_path: Path, model_file: Path, weights: dict[str, npt.NDArray[Any]]
) -> None:
    model = onnx.load(str(model_file))
    renamed = {}
    for init in model.graph.initializer:
        if init.name in weights:
            new = _tensorflow_name(init.name)
            renamed[init.name] = new
            if init.name == "span/weight":  # TensorFlow's squad head is [2, hidden]
                init.CopyFrom(onnx.numpy_helper.from_array(weights["span/weight"].T.copy(), new))
            init.name = new
    path = tmp_path / "tf.onnx"
    onnx.save(model, str(path))  # the graph's references are stale: only weights are read
    read = read_bert_weights(path)
    assert len(set(renamed.values())) == len(weights)
    for name, array in weights.items():
        np.testing.assert_array_equal(read.arrays[name], array)


def test_a_model_of_other_weights_is_refused_in_one_line(tmp_path: Path, model_file: Path) -> None:
    model = onnx.load(str(model_file))
    for init in model.graph.initializer:
        init.name = "x/" + init.name
    path = tmp_path / "other.onnx"
    onnx.save(model, str(path))
    with pytest.raises(HarnessError, match="finds no weight 'embeddings/word'") as error:
        read_bert_weights(path)
    assert "\n" not in str(error.value)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    with pytest.raises(HarnessError, match="is not an ONNX model"):
        read_bert_weights(garbage)


def test_engine_is_built_once_and_holds_fp16_weights(
    tmp_path: Path, model_file: Path, weights: dict[str, npt.NDArray[Any]]
) -> None:
    cache = EngineCache(tmp_path / "engines")
    spec = bert_engine_spec("bert", "abc", "fp16")
    path, built = bert_engine(cache, spec, model_file)
    assert built and path.is_file()
    again, built_again = bert_engine(cache, spec, model_file)
    assert again == path and not built_again
    header, arrays = read_engine(path)
    assert (header.layers, header.heads, header.precision) == (2, 2, "fp16")
    assert arrays["layer1/ffn/in/weight"].dtype == np.float16
    np.testing.assert_allclose(
        arrays["layer1/ffn/in/weight"], weights["layer1/ffn/in/weight"], rtol=1e-3, atol=1e-4
    )
    assert bert_engine_spec("bert", "abc", "fp32").key != spec.key
    with pytest.raises(HarnessError, match="int8 is the onnxruntime"):
        bert_engine_spec("bert", "abc", "int8")
