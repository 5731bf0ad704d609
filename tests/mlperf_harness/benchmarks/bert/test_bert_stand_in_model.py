"""The BERT stand-in graph and its span head: the official interface run in ONNX Runtime, and a head
fitted on a small synthetic task that recovers answer positions from token identity, and its int8
engine and calibration. Tiny sizes (1 layer, hidden 32, a 1,000-token vocabulary)
keep it fast; the graph code is the default's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]
import pytest

from mlperf_harness.benchmarks.bert import stand_in_model as bert
from mlperf_harness.benchmarks.bert.build_stand_in_model import build_stand_in_bert
from mlperf_harness.benchmarks.bert.calibration import SquadCalibration, read_feature_list
from mlperf_harness.benchmarks.bert.engines import INT8_OPERATORS
from mlperf_harness.benchmarks.bert.span_head import (
    SpanFeatures,
    context_mask,
    fit_span_head,
    position_accuracy,
)
from mlperf_harness.datasets.squad.features import SquadFeatures
from mlperf_harness.engines.cache import EngineCache
from mlperf_harness.engines.onnxruntime.engine import onnxruntime_engine, onnxruntime_engine_spec
from mlperf_harness.errors import HarnessError

SMALL = bert.BertShape(layers=1, hidden=32, heads=2, intermediate=64, vocab_size=1000)
START_TOKEN, END_TOKEN = 7, 8  # the synthetic task's answer: from START_TOKEN to END_TOKEN
CLS, SEP = 101, 102
# The official BERT-large's parameters (HuggingFace's bert-large-uncased, 335,141,888) less its
# pooler (1024 x 1024 + 1024), which SQuAD's span head does not use, plus that head (1024 x 2 + 2).
BERT_LARGE_PARAMETERS = 335_141_888 - (1024 * 1024 + 1024) + (1024 * 2 + 2)


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def untrained() -> onnx.ModelProto:
    weights = bert.random_weights(SMALL, seed=0)
    weights["span/weight"] = np.random.default_rng(0).normal(size=(32, 2)).astype(np.float32)
    return bert.span_model(weights, SMALL, seed=0, metadata={})


def _features(count: int, seed: int) -> SpanFeatures:
    """Windows of [CLS] question [SEP] context [SEP] padding; each context holds START_TOKEN at the
    start position and END_TOKEN 1-3 tokens later; one window in eight holds neither (positions 0)."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((count, bert.SEQ_LENGTH), dtype=np.int64)
    mask, segments = np.zeros_like(ids), np.zeros_like(ids)
    starts, ends = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64)
    for row in range(count):
        question = rng.integers(200, 1000, size=int(rng.integers(4, 12)))
        context = rng.integers(200, 1000, size=int(rng.integers(40, 370 - len(question))))
        first = len(question) + 2  # the context's first token in the window
        tokens = [CLS, *question, SEP, *context, SEP]
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
        segments[row, first : len(tokens)] = 1
        if row % 8:
            start = int(rng.integers(0, len(context) - 4))
            end = start + int(rng.integers(1, 4))
            ids[row, first + start], ids[row, first + end] = START_TOKEN, END_TOKEN
            starts[row], ends[row] = first + start, first + end
    return SpanFeatures(ids, mask, segments, starts, ends)


def test_official_interface_with_dynamic_batch(untrained: onnx.ModelProto) -> None:
    onnx.checker.check_model(untrained)
    assert untrained.opset_import[0].version >= 13
    graph = untrained.graph
    for value in graph.input:
        dims = value.type.tensor_type.shape.dim
        assert value.type.tensor_type.elem_type == onnx.TensorProto.INT64
        assert dims[0].dim_param and dims[1].dim_value == 384
    assert [i.name for i in graph.input] == ["input_ids", "input_mask", "segment_ids"]
    assert [o.name for o in graph.output] == ["output_start_logits", "output_end_logits"]
    for value in graph.output:
        dims = value.type.tensor_type.shape.dim
        assert value.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
        assert dims[0].dim_param and dims[1].dim_value == 384 and len(dims) == 2
    metadata = {p.key: p.value for p in untrained.metadata_props}
    assert metadata["mlperf_harness.stand_in"] == "true"

    session = _session(untrained)
    features = _features(5, seed=1)
    for batch in (1, 5):
        inputs = next(features.batches(batch))[1]
        start, end = session.run(["output_start_logits", "output_end_logits"], inputs)
        assert start.shape == end.shape == (batch, 384) and start.dtype == np.float32
        assert np.isfinite(start).all() and not np.allclose(start, end)


def test_padding_is_masked_out(untrained: onnx.ModelProto) -> None:
    """Tokens under input_mask 0 change no unmasked position's logits: the additive mask works."""
    inputs = next(_features(2, seed=2).batches(2))[1]
    session = _session(untrained)
    start, end = session.run(None, inputs)
    padding = inputs["input_mask"] == 0
    changed = dict(inputs, input_ids=np.where(padding, 999, inputs["input_ids"]))
    start2, end2 = session.run(None, changed)
    unmasked = ~padding
    np.testing.assert_allclose(start2[unmasked], start[unmasked], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(end2[unmasked], end[unmasked], rtol=1e-5, atol=1e-5)
    assert not np.allclose(start2[padding], start[padding])  # padding's own logits do change


def test_sizes_and_parameter_counts() -> None:
    assert bert.parameter_count(bert.BERT_LARGE) == BERT_LARGE_PARAMETERS
    assert (bert.BERT_TINY.layers, bert.BERT_TINY.hidden, bert.BERT_TINY.heads) == (2, 128, 2)
    assert (bert.BERT_MINI.layers, bert.BERT_MINI.hidden, bert.BERT_MINI.intermediate) == (
        4,
        256,
        1024,
    )
    weights = bert.random_weights(SMALL, seed=0)
    assert {n: w.shape for n, w in weights.items()} == bert.weight_shapes(SMALL)
    assert all(w.dtype == np.float32 for w in weights.values())
    with pytest.raises(HarnessError, match="multiple"):
        bert.BertShape(hidden=30, heads=4).check()


def test_weights_depend_on_the_seed_and_groups_share_a_direction() -> None:
    group = np.arange(300, 340, dtype=np.int64)
    first, again = (bert.random_weights(SMALL, 4, [group]) for _ in range(2))
    other = bert.random_weights(SMALL, 5, [group])
    word = first["embeddings/word"]
    assert np.array_equal(word, again["embeddings/word"])
    assert not np.array_equal(word, other["embeddings/word"])

    def mean_cosine(rows: npt.NDArray[Any]) -> float:
        unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        similarity = unit @ unit.T
        return float(similarity[~np.eye(len(rows), dtype=bool)].mean())

    assert mean_cosine(word[group]) > 0.3  # GROUP_DIRECTION_SCALE 1: about 0.5
    assert abs(mean_cosine(word[400:440])) < 0.1  # unrelated rows: about 0


def test_fitted_head_recovers_positions_on_held_out_windows() -> None:
    train, held_out = _features(48, seed=10), _features(40, seed=11)
    built = build_stand_in_bert(train, token_groups=(), shape=SMALL, seed=0)
    assert built.head.answers == 42 and built.head.weight.shape == (32, 2)
    start_accuracy, end_accuracy = position_accuracy(built.model, held_out)
    assert start_accuracy >= 0.9 and end_accuracy >= 0.9
    again = build_stand_in_bert(train, token_groups=(), shape=SMALL, seed=0)
    assert again.serialized() == built.serialized()  # deterministic


def test_fit_rejects_features_without_answers_or_of_the_wrong_shape() -> None:
    body = bert.body_graph(bert.random_weights(SMALL, seed=0), SMALL)
    features = _features(4, seed=3)
    no_answers = SpanFeatures(
        features.input_ids,
        features.input_mask,
        features.segment_ids,
        np.zeros(4, dtype=np.int64),
        np.zeros(4, dtype=np.int64),
    )
    with pytest.raises(HarnessError, match="answer"):
        fit_span_head(body, no_answers)
    short = SpanFeatures(
        features.input_ids[:, :128],
        features.input_mask[:, :128],
        features.segment_ids[:, :128],
        features.start_positions,
        features.end_positions,
    )
    with pytest.raises(HarnessError, match="shape"):
        fit_span_head(body, short)


# ---------------------------------------------------------------------------------------------------
# The int8 engine (ONNX Runtime's QDQ quantization of the MatMuls, through the engine cache)


def _squad_features(span: SpanFeatures) -> SquadFeatures:
    count, length = span.input_ids.shape
    return SquadFeatures(
        input_ids=span.input_ids.astype(np.int32),
        input_mask=span.input_mask.astype(np.int32),
        segment_ids=span.segment_ids.astype(np.int32),
        example_index=np.arange(count, dtype=np.int32),
        doc_span_index=np.zeros(count, dtype=np.int32),
        token_to_orig=np.full((count, length), -1, dtype=np.int32),
        max_context=np.zeros((count, length), dtype=np.bool_),
    )


def test_int8_engine_keeps_the_answers(tmp_path: Path) -> None:
    fp32 = build_stand_in_bert(_features(48, seed=20), token_groups=(), shape=SMALL).model
    model_path = tmp_path / "model.onnx"
    onnx.save(fp32, str(model_path))
    calibration = SquadCalibration(_squad_features(_features(8, seed=21)), tuple(range(8)), "test")
    spec = onnxruntime_engine_spec("bert", "0" * 64, "int8", calibration, INT8_OPERATORS)
    cache = EngineCache(tmp_path / "engines")
    engine, built = onnxruntime_engine(cache, spec, model_path, calibration)
    assert built and dict(spec.options)["operators"] == "MatMul"
    assert sorted(p.name for p in engine.parent.iterdir()) == ["engine.json", engine.name]

    int8 = onnx.load(str(engine))
    assert [i.name for i in int8.graph.input] == list(bert.INPUT_NAMES)
    ops = [node.op_type for node in int8.graph.node]
    assert ops.count("QuantizeLinear") > 0 and ops.count("DequantizeLinear") > 0
    # Only the MatMuls' inputs are quantized: the embedding Gathers read fp32 tables.
    quantized = {node.output[0] for node in int8.graph.node if node.op_type == "DequantizeLinear"}
    gathers = [node for node in int8.graph.node if node.op_type == "Gather"]
    assert gathers and not any(set(node.input) & quantized for node in gathers)

    held_out = _features(24, seed=22)
    inputs = next(held_out.batches(24))[1]
    start, end = ort.InferenceSession(str(engine), providers=["CPUExecutionProvider"]).run(
        None, inputs
    )
    mask = context_mask(held_out.input_mask, held_out.segment_ids)
    answered = held_out.start_positions > 0
    starts = np.where(mask, start, -np.inf).argmax(axis=1)
    ends = np.where(mask, end, -np.inf).argmax(axis=1)
    assert np.mean(starts[answered] == held_out.start_positions[answered]) >= 0.9
    assert np.mean(ends[answered] == held_out.end_positions[answered]) >= 0.9
    # The same inputs again: the cache's engine, not a second build.
    assert onnxruntime_engine(cache, spec, model_path, calibration) == (engine, False)


def test_calibration_feeds_and_key() -> None:
    features = _squad_features(_features(5, seed=24))
    calibration = SquadCalibration(features, (4, 0, 2), "test")
    feeds = calibration.feeds(2, ["input_ids", "attention_mask", "token_type_ids"])
    assert [len(feed["input_ids"]) for feed in feeds] == [2, 1]
    assert feeds[0]["attention_mask"].dtype == np.int64
    assert np.array_equal(feeds[1]["token_type_ids"][0], features.segment_ids[2])
    other = SquadCalibration(features, (4, 0, 1), "test")
    assert calibration.sha256 != other.sha256
    assert calibration.sha256 == SquadCalibration(features, (4, 0, 2), "again").sha256
    with pytest.raises(HarnessError, match="no input named pixels"):
        calibration.feeds(2, ["input_ids", "pixels"])


def test_calibration_list_is_checked(tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("3\n\n0\n")
    assert read_feature_list(good, 4) == (3, 0)
    for text, problem in (("4\n", "line 1"), ("1\nx\n", "line 2"), ("\n", "names no")):
        bad = tmp_path / "bad.txt"
        bad.write_text(text)
        with pytest.raises(HarnessError, match=problem):
            read_feature_list(bad, 4)
