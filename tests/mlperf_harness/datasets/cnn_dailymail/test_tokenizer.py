"""GPT-J's tokenizer format: a trained byte-level BPE saved as the checkpoint's files, read back
from vocab.json + merges.txt or tokenizer.json alike, decoding as the reference's slow tokenizer
does (EOS dropped, extratokens, cleanup), and one line for each missing or broken file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from one_line_errors import raised_line

from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_samples
from mlperf_harness.datasets.cnn_dailymail.tokenizer import (
    EOS_TOKEN,
    BpeTokenizer,
    load_tokenizer,
    train_tokenizer,
)

FILES = ["merges.txt", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.json"]  # fmt: skip
TEXTS = [
    "  don't stop ,  it 's fine !",
    "café £5 \u2014 naïve 🙂",
    f"one{EOS_TOKEN}two",
    "Summarize the following news article:\n\n### Response:",
]


def _texts() -> list[str]:
    samples = generate_samples(200, seed=9)
    return [sample.prompt() for sample in samples] + [sample.summary for sample in samples]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tokenizer")
    train_tokenizer(_texts(), directory, vocab_size=800)
    return directory


@pytest.fixture(scope="module")
def tokenizer(trained: Path) -> BpeTokenizer:
    return load_tokenizer(trained)


def _copy(trained: Path, to: Path, names: list[str]) -> Path:
    to.mkdir()
    for name in names:
        shutil.copy(trained / name, to / name)
    return to


def test_training_writes_the_checkpoint_files_deterministically(
    trained: Path, tmp_path: Path
) -> None:
    assert sorted(path.name for path in trained.iterdir()) == FILES
    again = tmp_path / "again"
    train_tokenizer(_texts(), again, vocab_size=800)
    for name in FILES:
        assert (again / name).read_bytes() == (trained / name).read_bytes(), name


def test_layout_is_gpt2s(trained: Path, tokenizer: BpeTokenizer) -> None:
    vocab = json.loads((trained / "vocab.json").read_text(encoding="utf-8"))
    assert len(vocab) == tokenizer.vocab_size == 800
    assert vocab[EOS_TOKEN] == tokenizer.eos_id == 799  # last, as GPT-2's 50256
    assert tokenizer.special_ids == {799}
    assert "Ġ" in vocab and "Ċ" in vocab  # byte symbols for space and newline
    merges = (trained / "merges.txt").read_text(encoding="utf-8").split("\n")
    assert merges[0] == "#version: 0.2" and merges[-1] == ""
    assert all(len(line.split()) == 2 for line in merges[1:-1])
    config = json.loads((trained / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "GPT2Tokenizer" and config["eos_token"] == EOS_TOKEN


def test_decode_inverts_encode_and_drops_the_eos(tokenizer: BpeTokenizer) -> None:
    for text in [*_texts()[:50], *TEXTS]:
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids + [tokenizer.eos_id] * 3) == text.replace(EOS_TOKEN, "")
    assert tokenizer.encode(f"one{EOS_TOKEN}two").count(tokenizer.eos_id) == 1
    prompt = _texts()[0]
    assert tokenizer.encode(prompt, max_tokens=7) == tokenizer.encode(prompt)[:7]


def test_tokenizer_json_alone_reads_the_same(
    trained: Path, tokenizer: BpeTokenizer, tmp_path: Path
) -> None:
    fast = load_tokenizer(_copy(trained, tmp_path / "fast", ["tokenizer.json"]))
    assert (fast.vocab_size, fast.eos_id, fast.special_ids) == (800, 799, frozenset({799}))
    for text in TEXTS:
        ids = tokenizer.encode(text)
        assert fast.encode(text) == ids
        assert fast.decode(ids) == tokenizer.decode(ids)


def test_extratokens_decode_as_the_slow_tokenizer(trained: Path, tmp_path: Path) -> None:
    directory = _copy(trained, tmp_path / "extra", FILES)
    extras = {f"<|extratoken_{n}|>": 799 + n for n in (1, 2)}
    (directory / "added_tokens.json").write_text(json.dumps(extras))
    tokenizer = load_tokenizer(directory)
    assert tokenizer.vocab_size == 802
    assert tokenizer.encode("<|extratoken_2|>") == [801]
    a, b = tokenizer.encode("Hello there"), tokenizer.encode(" world")
    # transformers joins the text around an added token that is not special with spaces.
    assert tokenizer.decode([*a, 800, *b, 799]) == "Hello there <|extratoken_1|>  world"
    assert tokenizer.decode([799, 801]) == "<|extratoken_2|>"


def test_cleanup_follows_the_config_or_the_caller(trained: Path, tmp_path: Path) -> None:
    directory = _copy(trained, tmp_path / "clean", FILES)
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config["clean_up_tokenization_spaces"] = True
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    text = "He did n't say , it 's late . Why ?"
    ids = load_tokenizer(trained).encode(text)
    assert load_tokenizer(trained).decode(ids) == text
    assert load_tokenizer(directory).decode(ids) == "He didn't say, it's late. Why?"
    assert load_tokenizer(directory, clean_up_tokenization_spaces=False).decode(ids) == text


def test_missing_or_broken_files_are_one_line(trained: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "needs vocab.json and merges.txt" in raised_line(load_tokenizer, empty)
    half = _copy(trained, tmp_path / "half", ["vocab.json"])
    assert "has no merges.txt" in raised_line(load_tokenizer, half)
    broken = _copy(trained, tmp_path / "broken", ["vocab.json", "merges.txt"])
    (broken / "merges.txt").write_text("#version: 0.2\nĠ t\nabc\n")
    assert "line 3 is not a merge" in raised_line(load_tokenizer, broken)
    (broken / "merges.txt").write_text("#version: 0.2\nzzz qqq\n")
    assert "are not one BPE vocabulary" in raised_line(load_tokenizer, broken)
    (broken / "vocab.json").write_text("[1, 2]")
    assert "is not a GPT-2 vocabulary" in raised_line(load_tokenizer, broken)


def test_an_id_outside_the_vocabulary_is_one_line(tokenizer: BpeTokenizer) -> None:
    assert "token id 800 is not in tokenizer" in raised_line(tokenizer.decode, [5, 800])
    assert "token id -1" in raised_line(tokenizer.decode, [-1])
