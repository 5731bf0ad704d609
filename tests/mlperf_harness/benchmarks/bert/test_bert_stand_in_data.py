"""The generated SQuAD set and vocabulary: SQuAD v1.1's shape, BERT-uncased's vocabulary layout, and
the properties the stand-in relies on, checked with an independent WordPiece tokenizer below."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import pytest

from mlperf_harness.benchmarks.bert import stand_in_data as data
from mlperf_harness.errors import HarnessError

PARAGRAPHS = 48


class _WordPiece:
    """BERT-uncased's tokenizer for ASCII text: lower-case, split on spaces and punctuation, then
    greedy longest-match-first wordpieces ("##" inside a word); [UNK] for a word it cannot split."""

    def __init__(self, tokens: tuple[str, ...]) -> None:
        self.vocab = set(tokens)

    def word(self, word: str) -> list[str]:
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else f"##{word[start:end]}"
                if piece in self.vocab:
                    pieces.append(piece)
                    start = end
                    break
            else:
                return ["[UNK]"]
        return pieces

    def __call__(self, text: str) -> list[str]:
        words = re.findall(
            rf"[^\s{re.escape(string.punctuation)}]+|[{re.escape(string.punctuation)}]",
            text.lower(),
        )
        return [piece for word in words for piece in self.word(word)]


@pytest.fixture(scope="module")
def vocabulary() -> data.StandInVocabulary:
    return data.build_vocabulary(seed=0)


@pytest.fixture(scope="module")
def dataset(vocabulary: data.StandInVocabulary) -> dict[str, Any]:
    return data.generate_squad(vocabulary, 0, "dev", PARAGRAPHS, long_fraction=0.5)


@pytest.fixture(scope="module")
def tokenize(vocabulary: data.StandInVocabulary) -> _WordPiece:
    return _WordPiece(vocabulary.tokens)


def test_vocabulary_has_bert_uncased_layout(vocabulary: data.StandInVocabulary) -> None:
    tokens = vocabulary.tokens
    assert len(tokens) == len(set(tokens)) == 30_522
    assert [tokens.index(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [
        0,
        100,
        101,
        102,
        103,
    ]
    assert tokens[1] == "[unused0]" and tokens[104] == "[unused99]" and tokens[998] == "[unused993]"
    assert set(string.punctuation) <= set(tokens) and set(string.ascii_lowercase) <= set(tokens)
    for piece in vocabulary.first_pieces:
        assert piece in tokens
    for piece in (*vocabulary.middle_pieces, *vocabulary.last_pieces):
        assert f"##{piece}" in tokens
    pieces = {*vocabulary.first_pieces, *vocabulary.middle_pieces, *vocabulary.last_pieces}
    assert len(pieces) == sum(data.NAME_SET_SIZES)  # three disjoint sets
    assert not pieces & set(vocabulary.words)


def test_vocabulary_depends_on_the_seed_only() -> None:
    first, again, other = (data.build_vocabulary(s) for s in (0, 0, 1))
    assert first == again
    assert first.first_pieces != other.first_pieces and first.words != other.words


def test_squad_v1_1_shape_and_answer_offsets(dataset: dict[str, Any]) -> None:
    assert dataset["version"] == "1.1"
    ids = []
    paragraphs = [p for article in dataset["data"] for p in article["paragraphs"]]
    assert len(paragraphs) == PARAGRAPHS
    assert all(isinstance(article["title"], str) for article in dataset["data"])
    for paragraph in paragraphs:
        context = paragraph["context"]
        assert isinstance(context, str) and 1 <= len(paragraph["qas"]) <= 2
        for qa in paragraph["qas"]:
            ids.append(qa["id"])
            assert re.fullmatch(r"[0-9a-f]{24}", qa["id"]) and qa["question"].endswith("?")
            (answer,) = qa["answers"]
            start, text = answer["answer_start"], answer["text"]
            assert isinstance(start, int) and context[start : start + len(text)] == text
            assert re.fullmatch(r"[A-Z][a-z]+", text)
            assert context.count(text) == 1  # the one name of its context
    assert len(ids) == len(set(ids))


def test_names_split_into_their_syllable_sets(
    dataset: dict[str, Any], vocabulary: data.StandInVocabulary, tokenize: _WordPiece
) -> None:
    first = set(vocabulary.first_pieces)
    middle = {f"##{p}" for p in vocabulary.middle_pieces}
    last = {f"##{p}" for p in vocabulary.last_pieces}
    lengths = set()
    for context, _, answer in data.iter_answers(dataset):
        pieces = tokenize(answer["text"])
        lengths.add(len(pieces))
        assert pieces[0] in first and pieces[-1] in last and set(pieces[1:-1]) <= middle
        context_pieces = tokenize(context)
        assert "[UNK]" not in context_pieces
        # Name pieces occur in the context only as the answer's own.
        assert sum(p in first for p in context_pieces) == 1
        assert sum(p in last for p in context_pieces) == 1
    assert lengths == {2, 3, 4}


def test_some_contexts_exceed_the_window_and_questions_name_neighbours(
    dataset: dict[str, Any], tokenize: _WordPiece
) -> None:
    lengths = []
    following = set()
    for context, question, answer in data.iter_answers(dataset):
        lengths.append(len(tokenize(context)))
        start, end = answer["answer_start"], answer["answer_start"] + len(answer["text"])
        before = re.findall(r"[a-z]+", context[:start].lower())[-1]
        after = re.findall(r"[a-z]+", context[end:].lower())
        neighbours = {before, *after[:1]}
        assert set(re.findall(r"[a-z]+", question.lower())) & neighbours
        following.add(context[end : end + 1])
        if context[start - 1] == "(":
            assert context[end] == ")"
    assert max(lengths) > 2 * data.MAX_SEQ_LENGTH and min(lengths) < data.MAX_SEQ_LENGTH
    assert sum(n > data.MAX_SEQ_LENGTH for n in lengths) >= len(lengths) // 5
    assert {" ", ".", ",", ")"} <= following  # answers followed by punctuation too


def test_written_files_are_deterministic(tmp_path: Path) -> None:
    counts = data.SquadCounts(train=6, dev=4)
    first = data.write_stand_in_data(tmp_path / "a", seed=2, counts=counts)
    second = data.write_stand_in_data(tmp_path / "b", seed=2, counts=counts)
    for a, b in ((first.vocab, second.vocab), (first.train, second.train), (first.dev, second.dev)):
        assert a.read_bytes() == b.read_bytes()
    assert first.vocab.read_text().splitlines() == list(data.build_vocabulary(2).tokens)
    train, dev = json.loads(first.train.read_text()), json.loads(first.dev.read_text())
    assert sum(len(a["paragraphs"]) for a in train["data"]) == 6
    assert sum(len(a["paragraphs"]) for a in dev["data"]) == 4
    assert (
        train["data"][0]["paragraphs"][0]["context"] != dev["data"][0]["paragraphs"][0]["context"]
    )
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [
        "dev-v1.1.json",
        "train-v1.1.json",
        "vocab.txt",
    ]


@pytest.mark.parametrize("counts", [data.SquadCounts(train=0), data.SquadCounts(long_fraction=1.5)])
def test_bad_counts_are_user_errors(tmp_path: Path, counts: data.SquadCounts) -> None:
    with pytest.raises(HarnessError):
        data.write_stand_in_data(tmp_path, counts=counts)
    assert not tmp_path.joinpath("vocab.txt").exists()


def test_bad_seed_and_split_are_user_errors(vocabulary: data.StandInVocabulary) -> None:
    with pytest.raises(HarnessError, match="seed"):
        data.build_vocabulary(-1)
    with pytest.raises(HarnessError, match="split"):
        data.generate_squad(vocabulary, 0, "test", 1)
