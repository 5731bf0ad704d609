"""Llama 2's tokenizer, read from a checkpoint's `tokenizer.json` with `tokenizers`, and a small one
of the same format trained on generated text.

Llama 2's tokenizer (Llama-2-70b-chat-hf's tokenizer.json, the fast form of its SentencePiece
`tokenizer.model`): a BPE over pieces that start with "▁" for a space, with byte fallback (a
character outside the vocabulary becomes its UTF-8 bytes, tokens `<0x00>`..`<0xFF>` = ids 3..258),
`<unk>` = 0, `<s>` = 1 (BOS, added before each text), `</s>` = 2 (EOS); the normalizer puts "▁"
before the text and for every space; decoding maps "▁" back to spaces, joins byte tokens into
UTF-8 and drops the first space. MLCommons' evaluate-accuracy.py decodes with transformers' slow
LlamaTokenizer (`batch_decode(skip_special_tokens=True)`) and then strips every text, so the
leading space that tokenizer keeps or drops does not change a score.

`train_llama_tokenizer` writes a small vocabulary in the same files (tokenizer.json,
tokenizer_config.json, special_tokens_map.json; not tokenizer.model, SentencePiece's binary, which
only the reference's slow tokenizer reads). Training splits pieces at spaces and between letters,
digits and punctuation, so no piece spans a word and its punctuation (an article sentence's "."
stays a token of its own, as the stand-in's copy heads need), and keeps the chat template's
"[INST]" and "[/INST]" whole (Llama's own vocabulary splits them into four tokens each). "\\n" is left out of the vocabulary,
as in Llama's: it is the byte token `<0x0A>` (id 13).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.datasets.cnn_dailymail.tokenizer import (
    SPECIAL_TOKENS_MAP_JSON,
    TOKENIZER_CONFIG_JSON,
    TOKENIZER_JSON,
    BpeTokenizer,
    load_tokenizer,
)
from mlperf_harness.errors import HarnessError

UNK, BOS, EOS = "<unk>", "<s>", "</s>"
BOS_ID, EOS_ID = 1, 2
LLAMA_VOCAB_SIZE = 32_000
BYTE_TOKENS = tuple(f"<0x{byte:02X}>" for byte in range(256))  # ids 3..258
SPACE = "▁"
# Each piece the chat template's [INST] or [/INST], a word with its leading "▁", a run of digits,
# or a run of punctuation.
_TRAINING_SPLIT = r"▁?\[/?INST\]|▁?\p{L}+|▁?\p{N}+|▁?[^\s\p{L}\p{N}▁]+|▁+"


def load_llama_tokenizer(directory: Path) -> BpeTokenizer:
    """The tokenizer of a Llama checkpoint directory (its tokenizer.json)."""
    if not (directory / TOKENIZER_JSON).is_file():
        raise HarnessError(
            f"no {TOKENIZER_JSON} in {directory}: Llama 2's checkpoint ships it beside "
            "tokenizer.model (the fast tokenizer's file is what the harness reads)"
        )
    tokenizer = load_tokenizer(directory, default_eos=EOS)
    if tokenizer.tokenizer.token_to_id(BOS) is None:
        raise HarnessError(f"{directory / TOKENIZER_JSON} has no {BOS}: not Llama's tokenizer")
    return tokenizer


def bos_id(tokenizer: BpeTokenizer) -> int:
    found = tokenizer.tokenizer.token_to_id(BOS)
    if found is None:
        raise HarnessError(f"tokenizer {tokenizer.source} has no {BOS}")
    return int(found)


def encode_with_bos(tokenizer: BpeTokenizer, text: str) -> list[int]:
    """A text's ids as Llama's tokenizer gives them by default: BOS first (its post-processor)."""
    ids: list[int] = tokenizer.tokenizer.encode(text, add_special_tokens=True).ids
    return ids


def train_llama_tokenizer(
    texts: Iterable[str], directory: Path, vocab_size: int = 2048
) -> BpeTokenizer:
    """Train a vocabulary of `vocab_size` tokens on texts and save it in Llama's files: `<unk>`,
    `<s>`, `</s>`, the 256 byte tokens, then the pieces. The same texts give the same files."""
    reserved = 3 + len(BYTE_TOKENS)
    if vocab_size <= reserved + 1:
        raise HarnessError(f"a Llama vocabulary needs more than {reserved + 1} tokens")
    trainer_model = Tokenizer(models.BPE())
    trainer_model.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True),
            pre_tokenizers.Split(Regex(_TRAINING_SPLIT), behavior="isolated"),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - reserved, min_frequency=2, special_tokens=[], show_progress=False
    )
    trainer_model.train_from_iterator((text.replace("\n", " ") for text in texts), trainer)
    model = json.loads(trainer_model.to_str())["model"]
    pieces = sorted(model["vocab"].items(), key=lambda item: item[1])
    vocab = {name: i for i, name in enumerate((UNK, BOS, EOS, *BYTE_TOKENS))}
    for piece, _ in pieces:
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tokenizer = Tokenizer(
        models.BPE(
            vocab, [(str(a), str(b)) for a, b in merges], unk_token=UNK, byte_fallback=True,
            fuse_unk=True,
        )
    )  # fmt: skip
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)]
    )
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
         decoders.Strip(" ", 1, 0)]
    )  # fmt: skip
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, BOS_ID)]
    )
    tokenizer.add_special_tokens([AddedToken(name, special=True) for name in (UNK, BOS, EOS)])
    directory.mkdir(parents=True, exist_ok=True)
    write_text_atomic(directory / TOKENIZER_JSON, tokenizer.to_str(pretty=True) + "\n")
    specials = {"bos_token": BOS, "eos_token": EOS, "unk_token": UNK}
    write_text_atomic(directory / SPECIAL_TOKENS_MAP_JSON, json.dumps(specials, indent=2) + "\n")
    config = {
        "add_bos_token": True,
        "add_eos_token": False,
        **specials,
        "clean_up_tokenization_spaces": False,
        "legacy": False,
        "model_max_length": 4096,
        "tokenizer_class": "LlamaTokenizer",
    }
    write_text_atomic(directory / TOKENIZER_CONFIG_JSON, json.dumps(config, indent=2) + "\n")
    return load_llama_tokenizer(directory)
