"""Uncased BERT tokenization through the `tokenizers` library, token for token the reference's.

MLCommons' reference tokenizes with transformers' (Python) BertTokenizer: basic tokenization (drop
control characters and U+FFFD, spaces around CJK ideographs, lower case, strip accents, split on
whitespace and punctuation), then greedy longest-match-first WordPiece with "##" continuations,
where a word with no full match, or longer than 100 characters, becomes [UNK]. The special tokens
are never split. `tokenizers` builds the same pipeline from BertNormalizer, BertPreTokenizer and
WordPiece, in Rust: a generated set of 10,351 questions (29,100 features) was converted in 11 s
where the reference took 7 min 53 s (2 cores), with the same features.

Where the Rust normalizer and Python's `unicodedata` disagree, the text is first put in a form on
which they agree: Python drops every character of a category "C*" (unassigned code points too),
Rust only some (`_drop_controls`). Random Unicode strings checked against the reference found no
other difference.

`basic_tokenize` is the first half alone, which the answer's text alignment needs. It follows
NVIDIA's BasicTokenizer (DeepLearningExamples), which the reference imports for that: unlike
transformers, which lower-cases text a character at a time before tokenizing, it lower-cases whole
words, so a capital sigma at a word's end becomes final sigma (U+03C2) there, not U+03C3.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from mlperf_harness.datasets.squad.vocab import SPECIAL_TOKENS, UNK, Vocabulary

MAX_INPUT_CHARS_PER_WORD = 100  # the reference's: a longer word is one [UNK]

_NORMALIZER = normalizers.BertNormalizer(
    clean_text=True, handle_chinese_chars=True, strip_accents=True, lowercase=True
)
_PRE_TOKENIZER = pre_tokenizers.BertPreTokenizer()
_CAPITAL_SIGMA, _FINAL_SIGMA = "\u03a3", "\u03c2"
# The code points the reference puts spaces around (its _is_chinese_char: CJK ideographs).
_CJK = re.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f\U0002b820-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f]"
)


@dataclass(frozen=True)
class WordPieces:
    """The pieces of a sequence of words: their ids, and which word each piece came from."""

    ids: list[int]
    word_index: list[int]


class BertWordPiece:
    """The uncased BERT tokenizer of a vocabulary."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        tokenizer = Tokenizer(
            models.WordPiece(
                dict(vocab.ids), unk_token=UNK, max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD
            )
        )
        tokenizer.normalizer = _NORMALIZER
        tokenizer.pre_tokenizer = _PRE_TOKENIZER
        # Matched in the raw text before normalizing, as transformers keeps "[SEP]" whole.
        tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
        self._tokenizer = tokenizer

    def tokenize(self, text: str) -> list[str]:
        return [self.vocab.tokens[i] for i in self.encode_texts([text])[0]]

    def encode_texts(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text (no [CLS] or [SEP] added), all texts in one parallel call."""
        encodings = self._tokenizer.encode_batch(
            [_drop_controls(text) for text in texts], add_special_tokens=False
        )
        return [encoding.ids for encoding in encodings]

    def encode_words(self, paragraphs: Sequence[Sequence[str]]) -> list[WordPieces]:
        """The pieces of each paragraph's words, each word tokenized on its own (as the reference
        tokenizes the words of a context one by one), with the index of the word of each piece."""
        encodings = self._tokenizer.encode_batch(
            [[_drop_controls(word) for word in words] for words in paragraphs],
            is_pretokenized=True,
            add_special_tokens=False,
        )
        pieces = []
        for encoding in encodings:
            word_index = [word for word in encoding.word_ids if word is not None]
            if len(word_index) != len(encoding.ids):  # no piece of ours lacks a word
                raise AssertionError("a WordPiece token without a word")
            pieces.append(WordPieces(ids=encoding.ids, word_index=word_index))
        return pieces


def basic_tokenize(text: str) -> list[str]:
    """BERT's uncased basic tokenization (no vocabulary, no WordPiece): the words and punctuation
    marks of the cleaned, lower-cased, accent-stripped text. A whitespace-separated word that is a
    special token stays whole and upper-case, as in the BasicTokenizer of NVIDIA's
    DeepLearningExamples (PyTorch) that the reference's answer alignment imports."""
    pieces: list[str] = []
    # The reference's words: cleaned, spaces around CJK ideographs, split on Unicode whitespace.
    text = _drop_controls(text)
    if _CAPITAL_SIGMA in text:
        text = _final_sigmas(text)
    for word in _CJK.sub(r" \g<0> ", text).split():
        if word in SPECIAL_TOKENS:
            pieces.append(word)
            continue
        normalized = _NORMALIZER.normalize_str(word)
        pieces.extend(piece for piece, _offsets in _PRE_TOKENIZER.pre_tokenize_str(normalized))
    return pieces


def _drop_controls(text: str) -> str:
    """The text without the characters the reference drops (see _DroppedCharacters)."""
    return text.translate(_DROPPED)


class _DroppedCharacters(dict[int, int | None]):
    """A str.translate table, filled as characters are met: None for each character the reference
    drops (NUL, U+FFFD, and every category "C*" but tab, newline and carriage return)."""

    def __missing__(self, code: int) -> int | None:
        char = chr(code)
        control = unicodedata.category(char).startswith("C") and char not in "\t\n\r"
        kept = None if control or code == 0xFFFD else code
        self[code] = kept
        return kept


_DROPPED = _DroppedCharacters()


def _final_sigmas(text: str) -> str:
    """Capital sigmas that Python's lower() makes final sigma, replaced by it (the normalizer then
    keeps them). Python decides from the context (a cased letter before, none after), which
    whitespace and CJK ideographs end: lowering the whole text decides as lowering each word."""
    lowered = text.lower()
    out = []
    position = 0  # in `lowered`: characters may lower-case to several (İ -> i + dot)
    for char in text:
        final = char == _CAPITAL_SIGMA and lowered[position] == _FINAL_SIGMA
        out.append(_FINAL_SIGMA if final else char)
        position += len(char.lower())
    return "".join(out)
