"""The vocabulary file and the uncased BERT tokenizer: the reference's tokens on the cases that
decide them (WordPiece's longest match, accents, punctuation, unknown and over-long words, CJK,
special tokens, control characters, Greek final sigma)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from squad_samples import vocab_tokens, write_vocab

from mlperf_harness.datasets.squad.tokenizer import BertWordPiece, basic_tokenize
from mlperf_harness.datasets.squad.vocab import load_vocab, parse_vocab
from mlperf_harness.errors import HarnessError

# Greek letters by code point: in source text they pass for Latin ones.
ALPHA, DELTA, OMICRON, SIGMA, FINAL_SIGMA = "\u03b1", "\u03b4", "\u03bf", "\u03c3", "\u03c2"
CAPITAL_SIGMA = "\u03a3"
ROAD = "\u039f\u0394\u039f" + CAPITAL_SIGMA  # ODOS in Greek capitals
YOUR = CAPITAL_SIGMA + "\u0391" + CAPITAL_SIGMA  # SAS


@pytest.fixture(scope="module")
def tokenizer() -> BertWordPiece:
    greek = [SIGMA, FINAL_SIGMA, OMICRON, *(f"##{c}" for c in (DELTA, OMICRON, SIGMA, FINAL_SIGMA))]
    data = "".join(f"{t}\n" for t in vocab_tokens(["中", *greek]))
    return BertWordPiece(parse_vocab(data.encode(), "vocab.txt"))


def test_vocab_ids_are_line_numbers_and_a_repeated_token_takes_its_last(tmp_path: Path) -> None:
    path = tmp_path / "vocab.txt"
    data = b"[PAD]\r\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nfox\nfox\n\xc3\xa9t\xc3\xa9"
    path.write_bytes(data)
    vocab = load_vocab(path)
    assert vocab.tokens == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fox", "fox", "été")
    assert vocab.ids["[PAD]"] == 0 and vocab.ids["[MASK]"] == 4
    assert vocab.ids["fox"] == 6  # as transformers' load_vocab: the last line wins
    assert len(vocab) == 8
    assert vocab.sha256 == hashlib.sha256(data).hexdigest()


def test_vocab_digest_is_of_the_file_bytes(tmp_path: Path) -> None:
    one = load_vocab(write_vocab(tmp_path / "one.txt"))
    two = load_vocab(write_vocab(tmp_path / "two.txt", [*vocab_tokens(), "extra"]))
    assert one.sha256 != two.sha256
    assert one.sha256 == load_vocab(write_vocab(tmp_path / "again.txt")).sha256


def _vocab_error(tmp_path: Path, data: bytes | None) -> str:
    path = tmp_path / "vocab.txt"
    if data is not None:
        path.write_bytes(data)
    with pytest.raises(HarnessError) as caught:
        load_vocab(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


def test_vocab_errors(tmp_path: Path) -> None:
    assert "cannot read vocabulary" in _vocab_error(tmp_path, None)
    assert "lacks [CLS] [MASK]" in _vocab_error(tmp_path, b"[PAD]\n[UNK]\n[SEP]\nfox\n")
    assert "is not UTF-8" in _vocab_error(tmp_path, b"[PAD]\n\xff\n")
    assert "lacks [PAD] [UNK] [CLS] [SEP] [MASK]" in _vocab_error(tmp_path, b"")


def test_wordpiece_is_greedy_longest_match_first(tokenizer: BertWordPiece) -> None:
    assert tokenizer.tokenize("unaffable") == ["un", "##aff", "##able"]
    assert tokenizer.tokenize("foxes") == ["fox", "##e", "##s"]
    assert tokenizer.tokenize("the lazy dog") == ["the", "lazy", "dog"]


def test_case_and_accents_are_removed(tokenizer: BertWordPiece) -> None:
    assert tokenizer.tokenize("Café NAÏVE Résumé") == ["cafe", "naive", "resume"]
    # A combining accent after its letter is stripped too.
    assert tokenizer.tokenize("Cafe\u0301") == ["cafe"]


def test_punctuation_is_split_off(tokenizer: BertWordPiece) -> None:
    assert tokenizer.tokenize("Smith's (1895-1943).") == [
        "smith", "'", "s", "(", "1", "##8", "##9", "##5", "-", "1", "##9", "##4", "##3", ")", ".",
    ]  # fmt: skip
    # Unicode punctuation is punctuation; the vocabulary lacks it, so each is [UNK].
    assert tokenizer.tokenize("fox—dog…") == ["fox", "[UNK]", "dog", "[UNK]"]


def test_unknown_and_over_long_words_are_one_unk(tokenizer: BertWordPiece) -> None:
    # No piece for "ω": the whole word is [UNK], not "[UNK] ##mega".
    assert tokenizer.tokenize("Ωmega fox") == ["[UNK]", "fox"]
    assert tokenizer.tokenize("a" * 100) == ["a", *["##a"] * 99]
    assert tokenizer.tokenize("a" * 101 + " fox") == ["[UNK]", "fox"]


def test_cjk_ideographs_are_words_of_their_own(tokenizer: BertWordPiece) -> None:
    assert tokenizer.tokenize("fox中文dog") == ["fox", "中", "[UNK]", "dog"]


def test_special_tokens_stay_whole_in_text(tokenizer: BertWordPiece) -> None:
    assert tokenizer.tokenize("a[SEP]b [MASK]") == ["a", "[SEP]", "b", "[MASK]"]
    assert tokenizer.tokenize("[sep]") == ["[", "s", "##e", "##p", "]"]


def test_control_and_unassigned_characters_are_dropped(tokenizer: BertWordPiece) -> None:
    # BEL, a zero-width space (format), U+0378 (unassigned) and U+FFFD go, as in the reference.
    assert tokenizer.tokenize("fo\x07x d\u200bog th\u0378e\ufffd") == ["fox", "dog", "the"]
    assert tokenizer.tokenize("fox\u00a0dog\u2028the") == ["fox", "dog", "the"]


def test_capital_sigma_lowers_as_each_reference_lowers_it(tokenizer: BertWordPiece) -> None:
    # transformers lower-cases the text a character at a time: sigma everywhere.
    road = [OMICRON, f"##{DELTA}", f"##{OMICRON}"]
    assert tokenizer.tokenize(f"{ROAD} {CAPITAL_SIGMA}") == [*road, f"##{SIGMA}", SIGMA]
    # NVIDIA's BasicTokenizer (the answer alignment's) lower-cases whole words with Python's
    # str.lower: final sigma at a word's end, where the Rust normalizer alone gives sigma.
    assert basic_tokenize(f"{ROAD}, {YOUR}. {CAPITAL_SIGMA}") == [
        OMICRON + DELTA + OMICRON + FINAL_SIGMA, ",", SIGMA + ALPHA + FINAL_SIGMA, ".", SIGMA,
    ]  # fmt: skip


def test_words_are_tokenized_one_by_one_with_their_index(tokenizer: BertWordPiece) -> None:
    [pieces] = tokenizer.encode_words([["Smith's", "\u0301", "fox", "unaffable"]])
    vocab = tokenizer.vocab
    assert [vocab.tokens[i] for i in pieces.ids] == [
        "smith",
        "'",
        "s",
        "fox",
        "un",
        "##aff",
        "##able",
    ]
    # A word that tokenizes to nothing (a lone accent) has no piece; the next keeps its index.
    assert pieces.word_index == [0, 0, 0, 2, 3, 3, 3]
    assert tokenizer.encode_words([[]])[0].ids == []


def test_basic_tokenize_has_no_vocabulary() -> None:
    assert basic_tokenize("Steve Smith's Café, 中文!") == [
        "steve", "smith", "'", "s", "cafe", ",", "中", "文", "!",
    ]  # fmt: skip
    # A whitespace-separated special token stays whole, as NVIDIA's BasicTokenizer keeps it.
    assert basic_tokenize("a [UNK] b[SEP]") == ["a", "[UNK]", "b", "[", "sep", "]"]
