"""MLPerf's BERT features: each question and a window of its paragraph, as fixed-length token rows.

The rules are those of MLCommons' reference (create_squad_data.py, convert_examples_to_features,
as accuracy-squad.py calls it), so that a feature index means the same sample to LoadGen, to the
model and to the scorer:

- the question's tokens, cut to `max_query_length`;
- the paragraph's tokens (each word tokenized on its own) in windows of at most
  `max_seq_length - len(query) - 3` tokens, the next window starting `min(window, doc_stride)`
  tokens further on, the last one ending at the paragraph's end;
- a row `[CLS] query [SEP] window [SEP]`, segment 0 up to the first [SEP] and 1 after it, mask 1
  on real tokens, and zeros after (ids, mask and segment: the reference pads with id 0);
- for each window token, the paragraph word it came from, and whether this window gives it the
  most context (the largest `min(tokens left, tokens right) + 0.01 * window length`; the first
  such window on a tie): only there may a predicted answer start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from mlperf_harness.datasets.squad.examples import SquadExample
from mlperf_harness.datasets.squad.tokenizer import BertWordPiece, WordPieces
from mlperf_harness.datasets.squad.vocab import CLS, SEP, Vocabulary
from mlperf_harness.errors import HarnessError
from mlperf_harness.progress import bar_disabled

NOT_IN_DOCUMENT = -1  # token_to_orig of [CLS], the question, [SEP] and padding
# Questions tokenized per call: enough for the library's threads, few enough for a smooth bar.
_CHUNK = 512


@dataclass(frozen=True)
class FeatureSettings:
    """MLPerf's values by default (accuracy-squad.py: 384, 128, 64)."""

    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64

    def check(self) -> None:
        # [CLS], [SEP], [SEP] and the longest question must leave room for one document token.
        if self.doc_stride < 1 or self.max_query_length < 1:
            raise HarnessError(f"doc_stride and max_query_length must be at least 1: {self}")
        if self.max_seq_length < self.max_query_length + 4:
            raise HarnessError(
                f"max_seq_length {self.max_seq_length} leaves no room for the document after a "
                f"question of up to {self.max_query_length} tokens"
            )

    def to_json(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class SquadFeatures:
    """N features of length S = max_seq_length. The first three arrays are the model's inputs; the
    rest is what turns its logits back into answers."""

    input_ids: npt.NDArray[np.int32]  # [N, S]
    input_mask: npt.NDArray[np.int32]  # [N, S]: 1 on real tokens
    segment_ids: npt.NDArray[np.int32]  # [N, S]
    example_index: npt.NDArray[np.int32]  # [N]: the question (index into the examples)
    doc_span_index: npt.NDArray[np.int32]  # [N]: which window of the question's paragraph
    token_to_orig: npt.NDArray[np.int32]  # [N, S]: paragraph word of each token, else -1
    max_context: npt.NDArray[np.bool_]  # [N, S]: an answer may start at this token

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def max_seq_length(self) -> int:
        return int(self.input_ids.shape[1])

    def token_count(self, feature: int) -> int:
        """Real tokens of a feature: [CLS] query [SEP] window [SEP]."""
        return int(self.input_mask[feature].sum())

    def tokens(self, feature: int, vocab: Vocabulary) -> list[str]:
        ids = self.input_ids[feature, : self.token_count(feature)]
        return [vocab.tokens[i] for i in ids.tolist()]

    def by_example(self, example_count: int) -> list[list[int]]:
        """The feature indices of each example, in feature order."""
        grouped: list[list[int]] = [[] for _ in range(example_count)]
        for feature, example in enumerate(self.example_index.tolist()):
            grouped[example].append(feature)
        return grouped


_FIELDS = [field.name for field in fields(SquadFeatures)]


def doc_spans(doc_length: int, max_tokens: int, stride: int) -> list[tuple[int, int]]:
    """(start, length) of each window over a paragraph of doc_length tokens."""
    spans: list[tuple[int, int]] = []
    start = 0
    while start < doc_length:
        length = min(doc_length - start, max_tokens)
        spans.append((start, length))
        if start + length == doc_length:
            break
        start += min(length, stride)
    return spans


def max_context_span(spans: Sequence[tuple[int, int]], doc_length: int) -> npt.NDArray[np.intp]:
    """For each paragraph token, the window that gives it the most context."""
    positions = np.arange(doc_length)
    scores = np.full((len(spans), doc_length), -np.inf)
    for k, (start, length) in enumerate(spans):
        inside = slice(start, start + length)
        left = positions[inside] - start
        right = start + length - 1 - positions[inside]
        # The same float expression as the reference, so that near-ties break the same way.
        scores[k, inside] = np.minimum(left, right) + 0.01 * length
    best: npt.NDArray[np.intp] = np.argmax(scores, axis=0)  # the first best window on a tie
    return best


def convert_examples(
    examples: Sequence[SquadExample],
    tokenizer: BertWordPiece,
    settings: FeatureSettings | None = None,
    *,
    progress: bool = False,
) -> SquadFeatures:
    """The features of the examples, in example order; `progress` draws a bar on a terminal."""
    settings = settings or FeatureSettings()
    settings.check()
    pieces: dict[int, WordPieces] = {}  # by paragraph: the dev set asks ~5 questions about each
    parts = [_empty_features(0, settings)]  # so that no examples make no features
    bar = tqdm(
        total=len(examples), unit="question", desc="SQuAD features", disable=bar_disabled(progress)
    )
    with bar:
        for first in range(0, len(examples), _CHUNK):
            chunk = examples[first : first + _CHUNK]
            new = {
                e.paragraph_index: e.doc_tokens for e in chunk if e.paragraph_index not in pieces
            }
            pieces.update(zip(new, tokenizer.encode_words(list(new.values())), strict=True))
            queries = tokenizer.encode_texts([example.question_text for example in chunk])
            queries = [ids[: settings.max_query_length] for ids in queries]
            parts.append(_chunk_features(chunk, first, queries, pieces, tokenizer.vocab, settings))
            bar.update(len(chunk))
    return SquadFeatures(
        **{name: np.concatenate([getattr(part, name) for part in parts]) for name in _FIELDS}
    )


def _chunk_features(
    chunk: Sequence[SquadExample],
    first_index: int,
    queries: list[list[int]],
    pieces: dict[int, WordPieces],
    vocab: Vocabulary,
    settings: FeatureSettings,
) -> SquadFeatures:
    cls_id, sep_id = vocab.ids[CLS], vocab.ids[SEP]
    plans = [
        doc_spans(
            len(pieces[example.paragraph_index].ids),
            settings.max_seq_length - len(query) - 3,
            settings.doc_stride,
        )
        for example, query in zip(chunk, queries, strict=True)
    ]
    features = _empty_features(sum(len(spans) for spans in plans), settings)
    row = 0
    for offset_in_chunk, (example, query, spans) in enumerate(
        zip(chunk, queries, plans, strict=True)
    ):
        if not spans:  # a context with no tokens: no feature, as in the reference
            continue
        doc = pieces[example.paragraph_index]
        best_span = max_context_span(spans, len(doc.ids))
        offset = len(query) + 2  # [CLS] query [SEP]
        for span_index, (start, length) in enumerate(spans):
            window = slice(start, start + length)
            ids = [cls_id, *query, sep_id, *doc.ids[window], sep_id]
            real = len(ids)
            features.input_ids[row, :real] = ids
            features.input_mask[row, :real] = 1
            features.segment_ids[row, offset:real] = 1
            features.example_index[row] = first_index + offset_in_chunk
            features.doc_span_index[row] = span_index
            features.token_to_orig[row, offset : offset + length] = doc.word_index[window]
            features.max_context[row, offset : offset + length] = best_span[window] == span_index
            row += 1
    return features


def _empty_features(count: int, settings: FeatureSettings) -> SquadFeatures:
    shape = (count, settings.max_seq_length)
    return SquadFeatures(
        input_ids=np.zeros(shape, np.int32),
        input_mask=np.zeros(shape, np.int32),
        segment_ids=np.zeros(shape, np.int32),
        example_index=np.zeros(count, np.int32),
        doc_span_index=np.zeros(count, np.int32),
        token_to_orig=np.full(shape, NOT_IN_DOCUMENT, np.int32),
        max_context=np.zeros(shape, np.bool_),
    )
