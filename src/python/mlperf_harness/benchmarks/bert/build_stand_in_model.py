"""Build the BERT stand-in from training features: seeded weights, the body, the fitted span head.

The caller converts SQuAD to features (and says which token ids form the name-piece groups,
`stand_in_data.StandInVocabulary.name_piece_ids`); this module needs neither, only arrays.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

import onnx

from mlperf_harness.benchmarks.bert.span_head import SpanFeatures, SpanHead, fit_span_head
from mlperf_harness.benchmarks.bert.stand_in_model import (
    BERT_TINY,
    BertShape,
    Int64Array,
    body_graph,
    random_weights,
    span_model,
)


@dataclass(frozen=True)
class StandInBert:
    model: onnx.ModelProto  # the official interface, span head fitted
    head: SpanHead
    shape: BertShape
    seed: int
    seconds: float  # weights, hidden states and fit, in all

    def serialized(self) -> bytes:
        data: bytes = self.model.SerializeToString()
        return data

    def sha256(self) -> str:
        return hashlib.sha256(self.serialized()).hexdigest()


def build_stand_in_bert(
    train: SpanFeatures,
    token_groups: Sequence[Int64Array],
    shape: BertShape = BERT_TINY,
    seed: int = 0,
) -> StandInBert:
    """Seeded weights (`token_groups` sharing directions), the head fitted on `train`."""
    started = time.perf_counter()
    weights = random_weights(shape, seed, token_groups)
    head = fit_span_head(body_graph(weights, shape), train)
    weights["span/weight"] = head.weight
    weights["span/bias"] = head.bias
    model = span_model(
        weights, shape, seed, {"mlperf_harness.span_head_answers": str(head.answers)}
    )
    return StandInBert(model, head, shape, seed, time.perf_counter() - started)
