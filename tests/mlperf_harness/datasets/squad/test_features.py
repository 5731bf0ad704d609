"""MLPerf's feature conversion: the row layout, windows over contexts longer than a row, which
window gives each token the most context, question truncation, and the map back to words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from squad_samples import long_context, squad_document, vocab_tokens, write_squad

from mlperf_harness.datasets.squad.examples import SquadExample, read_examples
from mlperf_harness.datasets.squad.features import (
    FeatureSettings,
    SquadFeatures,
    convert_examples,
    doc_spans,
    max_context_span,
)
from mlperf_harness.datasets.squad.tokenizer import BertWordPiece
from mlperf_harness.datasets.squad.vocab import parse_vocab
from mlperf_harness.errors import HarnessError


@pytest.fixture(scope="module")
def tokenizer() -> BertWordPiece:
    return BertWordPiece(parse_vocab("".join(f"{t}\n" for t in vocab_tokens()).encode(), "v"))


def _examples(
    tmp_path: Path, paragraphs: list[tuple[str, list[tuple[str, str, list[str]]]]]
) -> list[SquadExample]:
    return read_examples(write_squad(tmp_path / "dev.json", squad_document(paragraphs)))


def _convert(
    tmp_path: Path,
    tokenizer: BertWordPiece,
    paragraphs: list[tuple[str, list[tuple[str, str, list[str]]]]],
    settings: FeatureSettings | None = None,
) -> tuple[list[SquadExample], SquadFeatures]:
    examples = _examples(tmp_path, paragraphs)
    return examples, convert_examples(examples, tokenizer, settings)


def test_windows_follow_the_reference_rule() -> None:
    assert doc_spans(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert doc_spans(10, 4, 8) == [(0, 4), (4, 4), (8, 2)]  # never a gap: at most a window on
    assert doc_spans(4, 4, 3) == [(0, 4)]
    assert doc_spans(0, 4, 3) == []
    # 1000 tokens, 377 per window, stride 128: windows at 0, 128, ... until one reaches the end.
    assert doc_spans(1000, 377, 128) == [(s, 377) for s in range(0, 640, 128)] + [(640, 360)]


def test_max_context_is_the_larger_smaller_side_and_the_first_on_a_tie() -> None:
    # Windows [0, 4) and [2, 6) over 6 tokens. Token 2: min(2, 1) + 0.04 against min(0, 3) + 0.04;
    # token 3: min(3, 0) + 0.04 against min(1, 2) + 0.04.
    assert max_context_span([(0, 4), (2, 4)], 6).tolist() == [0, 0, 0, 1, 1, 1]
    # Token 2 of [0, 4) and [1, 5): min(2, 1) = min(1, 2), the same length: the first window.
    assert max_context_span([(0, 4), (1, 4)], 5).tolist() == [0, 0, 0, 1, 1]
    # Equal sides: the longer window wins by its 0.01 per token (token 1: 1.03 against 1.05).
    assert max_context_span([(0, 3), (0, 5)], 5).tolist() == [1, 1, 1, 1, 1]


def test_a_context_longer_than_a_row_is_two_windows(
    tmp_path: Path, tokenizer: BertWordPiece
) -> None:
    context = long_context(400)  # 400 one-token words
    _, features = _convert(tmp_path, tokenizer, [(context, [("q", "where is the fox", ["alpha"])])])
    assert len(features) == 2
    assert features.example_index.tolist() == [0, 0]
    assert features.doc_span_index.tolist() == [0, 1]
    vocab = tokenizer.vocab
    # 4 question tokens: windows of 384 - 4 - 3 = 377 tokens, the second from token 128 to the end.
    first, second = features.tokens(0, vocab), features.tokens(1, vocab)
    assert first[:6] == ["[CLS]", "where", "is", "the", "fox", "[SEP]"]
    assert len(first) == 384 and first[-1] == "[SEP]"
    assert len(second) == 6 + 272 + 1 and second[-1] == "[SEP]"
    assert first[6:-1] == [w for w in context.split()[:377]]
    assert second[6:-1] == [w for w in context.split()[128:]]
    assert features.token_to_orig[0, 6:383].tolist() == list(range(377))
    assert features.token_to_orig[1, 6:278].tolist() == list(range(128, 400))
    assert (features.token_to_orig[0, :6] == -1).all() and features.token_to_orig[0, 383] == -1
    assert (features.token_to_orig[1, 278:] == -1).all()
    # Word 252 is centred better in the first window (min(252, 124) + 3.77 against
    # min(124, 147) + 2.72), word 253 in the second (126.77 against 127.72).
    first_max = {int(w) for w in features.token_to_orig[0][features.max_context[0]]}
    second_max = {int(w) for w in features.token_to_orig[1][features.max_context[1]]}
    assert first_max == set(range(253))
    assert second_max == set(range(253, 400))
    assert not features.max_context[0, :6].any() and not features.max_context[1, 278:].any()


def test_row_layout_segments_mask_and_padding(tmp_path: Path, tokenizer: BertWordPiece) -> None:
    _, features = _convert(tmp_path, tokenizer, [("The quick fox.", [("q", "Who is?", ["fox"])])])
    assert features.tokens(0, tokenizer.vocab) == [
        "[CLS]", "who", "is", "?", "[SEP]", "the", "quick", "fox", ".", "[SEP]",
    ]  # fmt: skip
    assert features.input_ids.dtype == np.int32 and features.input_ids.shape == (1, 384)
    assert features.input_mask[0].tolist() == [1] * 10 + [0] * 374
    assert features.segment_ids[0].tolist() == [0] * 5 + [1] * 5 + [0] * 374
    assert (features.input_ids[0, 10:] == 0).all()
    assert features.token_to_orig[0, :10].tolist() == [-1] * 5 + [0, 1, 2, 2, -1]
    assert features.max_context[0, :10].tolist() == [False] * 5 + [True] * 4 + [False]
    assert features.token_count(0) == 10


def test_a_long_question_is_cut_to_64_tokens(tmp_path: Path, tokenizer: BertWordPiece) -> None:
    question = " ".join(["fox"] * 70)
    _, features = _convert(tmp_path, tokenizer, [(long_context(400), [("q", question, ["beta"])])])
    tokens = features.tokens(0, tokenizer.vocab)
    assert tokens[:66] == ["[CLS]", *["fox"] * 64, "[SEP]"]
    assert tokens[66] == "alpha"
    assert features.segment_ids[0, :66].tolist() == [0] * 66 and features.segment_ids[0, 66] == 1
    # Windows of 384 - 64 - 3 = 317 tokens: 400 tokens need two (0 and 128).
    assert features.token_to_orig[1, 66] == 128


def test_pieces_map_back_to_their_words(tmp_path: Path, tokenizer: BertWordPiece) -> None:
    context = "Steve Smith's café (1895-1943). Ωmega unaffable"
    _, features = _convert(tmp_path, tokenizer, [(context, [("q", "Who?", ["Smith's"])])])
    tokens = features.tokens(0, tokenizer.vocab)
    doc = slice(4, features.token_count(0) - 1)
    assert tokens[doc] == [
        "steve", "smith", "'", "s", "cafe", "(", "1", "##8", "##9", "##5", "-", "1", "##9", "##4",
        "##3", ")", ".", "[UNK]", "un", "##aff", "##able",
    ]  # fmt: skip
    assert features.token_to_orig[0, doc].tolist() == [0, 1, 1, 1, 2] + [3] * 12 + [4, 5, 5, 5]


def test_several_questions_and_paragraphs_keep_their_order(
    tmp_path: Path, tokenizer: BertWordPiece
) -> None:
    _, features = _convert(
        tmp_path,
        tokenizer,
        [
            (long_context(700), [("a", "the fox", ["alpha"]), ("b", "who", ["beta"])]),
            ("the dog", [("c", "what", ["dog"])]),
        ],
    )
    # 700 tokens: windows at 0, 128, 256, 384 for "the fox" (379 per window) and for "who" (380).
    assert features.example_index.tolist() == [0] * 4 + [1] * 4 + [2]
    assert features.doc_span_index.tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0]
    assert features.by_example(3) == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]
    # Every word is the max-context token of exactly one window of each question.
    for rows in ([0, 1, 2, 3], [4, 5, 6, 7]):
        words = np.concatenate([features.token_to_orig[r][features.max_context[r]] for r in rows])
        assert sorted(words.tolist()) == list(range(700))


def test_a_context_without_tokens_has_no_feature(tmp_path: Path, tokenizer: BertWordPiece) -> None:
    examples, features = _convert(
        tmp_path,
        tokenizer,
        [("\u0301 \x07", [("a", "what", ["\u0301"])]), ("the dog", [("b", "who", ["dog"])])],
    )
    assert len(examples) == 2
    assert features.example_index.tolist() == [1]
    assert features.by_example(2) == [[], [0]]


def test_smaller_settings(tmp_path: Path, tokenizer: BertWordPiece) -> None:
    settings = FeatureSettings(max_seq_length=12, doc_stride=3, max_query_length=2)
    _, features = _convert(
        tmp_path, tokenizer, [(long_context(10), [("q", "where is the fox", ["beta"])])], settings
    )
    # Question cut to 2 tokens, windows of 12 - 2 - 3 = 7 tokens: at 0 and 3.
    assert features.input_ids.shape == (2, 12)
    assert features.tokens(0, tokenizer.vocab)[:4] == ["[CLS]", "where", "is", "[SEP]"]
    assert features.token_to_orig[:, 4].tolist() == [0, 3]


def test_settings_that_leave_no_room_are_refused(tokenizer: BertWordPiece) -> None:
    with pytest.raises(HarnessError, match="leaves no room"):
        convert_examples([], tokenizer, FeatureSettings(max_seq_length=66, max_query_length=64))
    with pytest.raises(HarnessError, match="at least 1"):
        convert_examples([], tokenizer, FeatureSettings(doc_stride=0))
    assert len(convert_examples([], tokenizer)) == 0
