"""The Llama-format tokenizer: trained on generated text, saved in Llama's files, read back with
`tokenizers`: BOS first, "\\n" as the byte token <0x0A> (id 13, as Llama's), characters outside the
vocabulary through byte fallback, the chat template's [/INST] one token, decoding as the
reference's slow tokenizer does after its strip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlperf_harness.datasets.open_orca.samples import chat_prompt
from mlperf_harness.datasets.open_orca.synthetic import answer_text, generate_pair
from mlperf_harness.datasets.open_orca.tokenizer import (
    BOS_ID,
    EOS_ID,
    encode_with_bos,
    load_llama_tokenizer,
    train_llama_tokenizer,
)
from mlperf_harness.errors import HarnessError


def _texts(count: int) -> list[str]:
    pairs = [generate_pair(0, i) for i in range(count)]
    return [chat_prompt(s, q).removeprefix("<s>") for s, q, _ in pairs] + [
        answer_text(a) for _, _, a in pairs
    ]


def test_a_trained_tokenizer_reads_back_in_llamas_layout(tmp_path: Path) -> None:
    tokenizer = train_llama_tokenizer(_texts(30), tmp_path, vocab_size=800)
    again = train_llama_tokenizer(_texts(30), tmp_path / "again", vocab_size=800)
    assert (tmp_path / "tokenizer.json").read_bytes() == (
        tmp_path / "again" / "tokenizer.json"
    ).read_bytes()
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "LlamaTokenizer" and config["eos_token"] == "</s>"
    loaded = load_llama_tokenizer(tmp_path)
    assert loaded.eos_id == EOS_ID == again.eos_id and tokenizer.vocab_size <= 800
    vocab = loaded.tokenizer
    assert [vocab.id_to_token(i) for i in range(4)] == ["<unk>", "<s>", "</s>", "<0x00>"]
    system, question, answer = generate_pair(5, 0)
    ids = encode_with_bos(loaded, chat_prompt(system, question))
    assert ids[:2] == [BOS_ID, BOS_ID]  # the post-processor's and the template's "<s>"
    assert vocab.id_to_token(ids[-1]) == "▁[/INST]"
    assert 13 in ids and vocab.id_to_token(13) == "<0x0A>"
    text = "Zoë paid ¥5 — done .\n Next line ."  # ¥ and — are not in the vocabulary
    encoded = loaded.encode(text)
    assert "<0xC2>" in [vocab.id_to_token(i) for i in encoded]  # byte fallback
    assert loaded.decode([*encoded, EOS_ID]) == text  # EOS dropped, as skip_special_tokens does
    assert loaded.decode([BOS_ID, *loaded.encode(answer_text(answer))]).strip() == answer_text(
        answer
    )


def test_a_directory_without_tokenizer_json_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"no tokenizer\.json in") as error:
        load_llama_tokenizer(tmp_path)
    assert "\n" not in str(error.value)
