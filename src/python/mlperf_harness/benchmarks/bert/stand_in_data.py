"""The embedded default's data for BERT: a generated SQuAD v1.1 set and a WordPiece vocabulary.

With no official SQuAD files at hand, the stand-in model answers questions about generated text.
Everything is drawn from one seed and is the same on every machine:

- `vocab.txt` in the layout of BERT-uncased's (30,522 entries; [PAD] 0, [UNK] 100, [CLS] 101,
  [SEP] 102, [MASK] 103, [unused0..993] around them), holding the punctuation, digits and letters
  (whole and as ## pieces, so that any lower-case text tokenizes), a few English question words, the
  syllables, and pseudo-words filling it to the official size.
- Contexts of pseudo-words ("Balimo dorefa, sutami."), each holding one name. A name's wordpieces
  come from syllable sets no ordinary word uses: its first piece from one set (a whole-word entry),
  zero to two middle pieces and its last piece from two others (## entries), so the tokenizer splits
  "Zorvak" into "zor", "##vak" and a model can find the answer's start and end from token identity.
  Every name syllable has three letters and starts with a consonant no word starts with, so greedy
  longest-match-first WordPiece always splits a name at its syllables.
- Questions mention the words beside the name ("What name follows dorefa?"), the signal a model that
  reads the question can use; a name is the only one in its context, so a model that recognises
  names alone answers too.
- Some contexts are longer than 384 wordpieces (BERT's window), so the answer may lie in a later
  window of the 128-token document stride; some answers are followed by punctuation ("Zorvak." or
  "(Zorvak)"), so mapping predicted tokens back to the original text matters.

Files are written atomically under their official names (`train-v1.1.json`, `dev-v1.1.json`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import string
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.errors import HarnessError

VOCAB_SIZE = 30_522  # BERT-uncased's vocab.txt
PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
UNUSED_COUNT = 994  # [unused0] .. [unused993], as in BERT-uncased
SPECIAL_IDS = {PAD: 0, UNK: 100, CLS: 101, SEP: 102, MASK: 103}
MAX_SEQ_LENGTH = 384  # MLPerf BERT's window, in wordpieces

VOCAB_FILE_NAME = "vocab.txt"
SPLIT_FILE_NAMES = {"train": "train-v1.1.json", "dev": "dev-v1.1.json"}

# Ordinary words are built from consonant-vowel syllables, names from consonant-vowel-consonant ones
# that start with consonants words never start with: no word is a prefix of a name, and since every
# name syllable has three letters, greedy longest-match-first WordPiece splits names at syllables.
WORD_ONSETS = "bdfglmnprst"
NAME_ONSETS = "hjkvwyz"
NAME_CODAS = "klmnrst"
VOWELS = "aeiou"
NAME_SET_SIZES = (80, 80, 80)  # first, middle, last pieces (of the 7 x 5 x 7 = 245 syllables)
QUESTION_WORDS = (
    "what",
    "which",
    "name",
    "follows",
    "comes",
    "before",
    "is",
    "the",
    "between",
    "and",
)

# Shape of the generated text.
SHORT_CONTEXT_TOKENS = (60, 300)  # wordpieces of an ordinary context (inclusive range)
LONG_CONTEXT_TOKENS = (400, 800)  # a long one: two to five windows of the 128-token stride
SENTENCE_WORDS = (5, 14)
COMMA_PROBABILITY = 0.08
MIDDLE_PIECES = (0, 2)  # a name has 2 to 4 wordpieces
PARAGRAPHS_PER_ARTICLE = 8
ZIPF_EXPONENT = 1.0  # word frequencies: a few words common, most rare, like text

# SeedSequence keys: the vocabulary and each split draw from their own streams.
_VOCAB_STREAM = 0
_SPLIT_STREAMS = {"train": 1, "dev": 2}


@dataclass(frozen=True)
class StandInVocabulary:
    """The vocabulary's entries in id order, and which of them the generated text uses how."""

    tokens: tuple[str, ...]  # line i of vocab.txt is the token of id i
    words: tuple[str, ...]  # the pseudo-words of contexts, most frequent first
    first_pieces: tuple[str, ...]  # a name's first syllable (a whole-word entry)
    middle_pieces: tuple[str, ...]  # its middle syllables ("##" entries without the "##")
    last_pieces: tuple[str, ...]  # its last syllable (likewise)

    def ids(self, entries: Sequence[str]) -> npt.NDArray[np.int64]:
        index = {token: i for i, token in enumerate(self.tokens)}
        return np.array([index[entry] for entry in entries], dtype=np.int64)

    def name_piece_ids(self) -> tuple[npt.NDArray[np.int64], ...]:
        """Token ids of the (first, middle, last) name pieces as they appear in tokenized text."""
        return (
            self.ids(self.first_pieces),
            self.ids([f"##{piece}" for piece in self.middle_pieces]),
            self.ids([f"##{piece}" for piece in self.last_pieces]),
        )


@dataclass(frozen=True)
class SquadCounts:
    """Paragraphs per split (each holds one or two questions) and the share of long contexts."""

    train: int = 300  # ~700 windows: the fitted head reached 100% on held-out ones
    dev: int = 600
    long_fraction: float = 0.25

    def check(self) -> None:
        if min(self.train, self.dev) < 1:
            raise HarnessError(f"every split needs at least 1 paragraph, got {self}")
        if not 0.0 <= self.long_fraction <= 1.0:
            raise HarnessError(f"long_fraction must lie in [0, 1], got {self.long_fraction}")


@dataclass(frozen=True)
class StandInDataFiles:
    vocab: Path
    train: Path
    dev: Path


def _rng(seed: int, stream: int) -> np.random.Generator:
    if seed < 0:
        raise HarnessError(f"seed must be non-negative, got {seed}")
    return np.random.default_rng(np.random.SeedSequence([seed, stream]))


# ---------------------------------------------------------------------------------------------------
# The vocabulary


def _special_entries() -> list[str]:
    """Ids 0..998 as in BERT-uncased: [PAD], [unused0..98], [UNK], [CLS], [SEP], [MASK], the rest."""
    unused = [f"[unused{i}]" for i in range(UNUSED_COUNT)]
    return [PAD, *unused[:99], UNK, CLS, SEP, MASK, *unused[99:]]


def _syllables(onsets: str, codas: str = "") -> list[str]:
    return ["".join(parts) for parts in itertools.product(onsets, VOWELS, codas or [""])]


def _pseudo_words(rng: np.random.Generator, count: int, taken: set[str]) -> list[str]:
    """`count` distinct words of two or three word syllables, none of them already in `taken`."""
    syllables = _syllables(WORD_ONSETS)
    two = ["".join(p) for p in itertools.product(syllables, repeat=2)]
    three = ["".join(p) for p in itertools.product(syllables, repeat=3)]
    # All two-syllable words (short, like common words), then a seeded sample of three-syllable ones.
    candidates = [w for w in rng.permutation(two).tolist() if w not in taken]
    extra = rng.choice(len(three), size=count, replace=False)
    candidates += [w for w in (three[i] for i in extra.tolist()) if w not in taken]
    if len(candidates) < count:
        raise AssertionError(f"only {len(candidates)} pseudo-words for {count} entries")
    return [str(w) for w in candidates[:count]]


def build_vocabulary(seed: int = 0) -> StandInVocabulary:
    """The stand-in vocabulary of `seed`: exactly VOCAB_SIZE unique entries."""
    rng = _rng(seed, _VOCAB_STREAM)
    name_syllables = [str(s) for s in rng.permutation(_syllables(NAME_ONSETS, NAME_CODAS))]
    if sum(NAME_SET_SIZES) > len(name_syllables):
        raise AssertionError("name piece sets larger than the syllables that make them")
    bounds = list(itertools.accumulate(NAME_SET_SIZES, initial=0))
    first, middle, last = (
        tuple(name_syllables[begin:end]) for begin, end in itertools.pairwise(bounds)
    )
    characters = [*string.punctuation, *string.digits, *string.ascii_lowercase]
    word_syllables = _syllables(WORD_ONSETS)
    whole = [*characters, *QUESTION_WORDS, *word_syllables, *name_syllables]
    pieces = [f"##{entry}" for entry in [*string.digits, *string.ascii_lowercase]]
    pieces += [f"##{syllable}" for syllable in [*word_syllables, *name_syllables]]
    fixed = [*_special_entries(), *whole]
    word_count = VOCAB_SIZE - len(fixed) - len(pieces)
    words = _pseudo_words(rng, word_count, set(fixed))
    tokens = (*fixed, *words, *pieces)
    if len(set(tokens)) != VOCAB_SIZE:
        raise AssertionError(f"{len(set(tokens))} unique vocabulary entries, not {VOCAB_SIZE}")
    return StandInVocabulary(tokens, tuple(words), first, middle, last)


def write_vocabulary(path: Path, vocabulary: StandInVocabulary) -> None:
    write_text_atomic(path, "".join(f"{token}\n" for token in vocabulary.tokens))


# ---------------------------------------------------------------------------------------------------
# The SQuAD set


@dataclass
class _Sentence:
    """A sentence's words (with any comma attached); the name goes between two of them."""

    words: list[str]

    def tokens(self) -> int:
        """Its wordpieces: one per word, comma and full stop (a name adds its own)."""
        return sum(2 if word.endswith(",") else 1 for word in self.words) + 1  # + the full stop


class _TextSampler:
    """Draws words (by a Zipf law over the vocabulary's word list) and names."""

    def __init__(self, vocabulary: StandInVocabulary, rng: np.random.Generator) -> None:
        self.vocabulary = vocabulary
        self.rng = rng
        ranks = np.arange(1, len(vocabulary.words) + 1, dtype=np.float64)
        weights = ranks**-ZIPF_EXPONENT
        self.cumulative = np.cumsum(weights / weights.sum())

    def words(self, count: int) -> list[str]:
        indices = np.searchsorted(self.cumulative, self.rng.random(count), side="right")
        indices = np.minimum(indices, len(self.vocabulary.words) - 1)
        return [self.vocabulary.words[i] for i in indices.tolist()]

    def integer(self, bounds: tuple[int, int]) -> int:
        return int(self.rng.integers(bounds[0], bounds[1] + 1))

    def sentence(self) -> _Sentence:
        words = self.words(self.integer(SENTENCE_WORDS))
        commas = self.rng.random(len(words)) < COMMA_PROBABILITY
        commas[-1] = False  # the full stop follows the last word
        return _Sentence([w + ("," if c else "") for w, c in zip(words, commas, strict=True)])

    def name(self) -> str:
        """A capitalised name, e.g. "Zorvak": a first piece, 0-2 middle ones and a last one."""
        v = self.vocabulary
        middles = self.integer(MIDDLE_PIECES)
        parts = [v.first_pieces[int(self.rng.integers(len(v.first_pieces)))]]
        parts += [
            v.middle_pieces[int(i)] for i in self.rng.integers(len(v.middle_pieces), size=middles)
        ]
        parts.append(v.last_pieces[int(self.rng.integers(len(v.last_pieces)))])
        return "".join(parts).capitalize()


@dataclass(frozen=True)
class _Paragraph:
    context: str
    answer: str
    answer_start: int
    before: str  # the word right before the name
    after: str | None  # the word right after it, None where the context ends with the name


# How an answer sits in its sentence: "plain" (a word follows), "comma" ("Zorvak, word"), "stop"
# (the name ends the sentence: "Zorvak."), "parens" ("(Zorvak) word").
_ANSWER_FORMS = ("plain", "comma", "stop", "parens")


def _paragraph(sampler: _TextSampler, long: bool) -> _Paragraph:
    target = sampler.integer(LONG_CONTEXT_TOKENS if long else SHORT_CONTEXT_TOKENS)
    sentences = [sampler.sentence(), sampler.sentence()]
    while sum(s.tokens() for s in sentences) < target:
        sentences.append(sampler.sentence())
    name = sampler.name()
    form = _ANSWER_FORMS[int(sampler.rng.integers(len(_ANSWER_FORMS)))]
    home = int(sampler.rng.integers(len(sentences)))
    words = sentences[home].words
    # The name goes right after word `slot` of sentence `home`: last in it for "stop", else before
    # another word (so that both its neighbours are words of its sentence).
    slot = len(words) - 1 if form == "stop" else int(sampler.rng.integers(len(words) - 1))

    parts: list[str] = []  # pieces of the context, joined by spaces
    answer_start = -1
    for index, sentence in enumerate(sentences):
        for position, word in enumerate(sentence.words):
            parts.append(word.capitalize() if position == 0 else word)
            if index == home and position == slot:
                parts[-1] = parts[-1].rstrip(",")
                offset = len(" ".join(parts)) + 1
                if form == "parens":
                    parts.append(f"({name})")
                    answer_start = offset + 1
                elif form == "comma":
                    parts.append(f"{name},")
                    answer_start = offset
                else:
                    parts.append(name)
                    answer_start = offset
        parts[-1] += "."
    context = " ".join(parts)
    before = words[slot].rstrip(",")
    if form == "stop":
        after = sentences[home + 1].words[0].rstrip(",") if home + 1 < len(sentences) else None
    else:
        after = words[slot + 1].rstrip(",")
    return _Paragraph(context, name, answer_start, before, after)


def _questions(paragraph: _Paragraph, rng: np.random.Generator) -> list[str]:
    """One or two questions, each naming a word beside the answer."""
    forms = [f"What name follows {paragraph.before}?"]
    if paragraph.after is not None:
        forms.append(f"Which name comes before {paragraph.after}?")
        forms.append(f"What is the name between {paragraph.before} and {paragraph.after}?")
    count = min(len(forms), int(rng.integers(1, 3)))
    return [forms[int(i)] for i in rng.choice(len(forms), size=count, replace=False)]


def _question_id(seed: int, split: str, paragraph: int, question: int) -> str:
    """24 hex digits, like SQuAD's ids; distinct across seeds and splits."""
    return hashlib.sha1(f"{seed}/{split}/{paragraph}/{question}".encode()).hexdigest()[:24]


def generate_squad(
    vocabulary: StandInVocabulary,
    seed: int,
    split: str,
    paragraphs: int,
    long_fraction: float = SquadCounts.long_fraction,
) -> dict[str, Any]:
    """A SQuAD v1.1 document ({"version", "data": [articles]}) of `paragraphs` generated paragraphs.

    Each paragraph has one or two questions, each with one answer (the paragraph's name) whose
    answer_start is its character offset in the context.
    """
    if split not in _SPLIT_STREAMS:
        raise HarnessError(f"unknown split {split!r}: expected one of {sorted(_SPLIT_STREAMS)}")
    rng = _rng(seed, _SPLIT_STREAMS[split])
    sampler = _TextSampler(vocabulary, rng)
    articles: list[dict[str, Any]] = []
    for index in range(paragraphs):
        if index % PARAGRAPHS_PER_ARTICLE == 0:
            title = "_".join(w.capitalize() for w in sampler.words(2))
            articles.append({"title": title, "paragraphs": []})
        paragraph = _paragraph(sampler, long=bool(rng.random() < long_fraction))
        qas = [
            {
                "id": _question_id(seed, split, index, q),
                "question": question,
                "answers": [{"answer_start": paragraph.answer_start, "text": paragraph.answer}],
            }
            for q, question in enumerate(_questions(paragraph, rng))
        ]
        articles[-1]["paragraphs"].append({"context": paragraph.context, "qas": qas})
    return {"version": "1.1", "data": articles}


def iter_answers(dataset: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(context, question, answer) of every answer in a SQuAD v1.1 document."""
    for article in dataset["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                for answer in qa["answers"]:
                    yield paragraph["context"], qa["question"], answer


def write_squad(path: Path, dataset: dict[str, Any]) -> None:
    # Compact, like the official files; ASCII text, so no escaping questions arise.
    write_text_atomic(path, json.dumps(dataset, separators=(",", ":")))


def write_stand_in_data(
    out_dir: Path, seed: int = 0, counts: SquadCounts | None = None
) -> StandInDataFiles:
    """Generate and write vocab.txt, train-v1.1.json and dev-v1.1.json into `out_dir`."""
    counts = counts or SquadCounts()
    counts.check()
    vocabulary = build_vocabulary(seed)
    files = StandInDataFiles(
        vocab=out_dir / VOCAB_FILE_NAME,
        train=out_dir / SPLIT_FILE_NAMES["train"],
        dev=out_dir / SPLIT_FILE_NAMES["dev"],
    )
    write_vocabulary(files.vocab, vocabulary)
    sizes = {"train": counts.train, "dev": counts.dev}
    for split, path in (("train", files.train), ("dev", files.dev)):
        write_squad(
            path, generate_squad(vocabulary, seed, split, sizes[split], counts.long_fraction)
        )
    return files
