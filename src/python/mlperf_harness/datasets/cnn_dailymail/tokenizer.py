"""GPT-J's tokenizer: GPT-2's byte-level BPE, read from a Hugging Face checkpoint's files with
`tokenizers`, and a small one of the same format trained on generated articles.

MLCommons' reference loads `AutoTokenizer.from_pretrained(checkpoint, use_fast=False)`:
transformers' Python GPT2Tokenizer, which reads the checkpoint's `vocab.json` (token -> id, the 256
byte symbols first, `<|endoftext|>` = 50256 last) and `merges.txt` (a "#version" line, then one merge
"a b" a line, by rank), and `added_tokens.json` (GPT-J's 143 `<|extratoken_N|>`, ids 50257..50399,
which pad the vocabulary to 50,400). Here the same files are read with `tokenizers` (Rust), which
splits words with the same GPT-2 pattern and applies the same merges; a directory with only the
fast format's `tokenizer.json` is read too. `special_tokens_map.json` and `tokenizer_config.json`
are read where present for the special tokens and the decoding option below.

Decoding is the slow tokenizer's `decode(ids, skip_special_tokens=True)` (transformers 4.57.6's
`_decode`, which the reference's `batch_decode` calls):

- special tokens (`<|endoftext|>`: the EOS and the padding after it) are dropped;
- a run of BPE tokens becomes its bytes, decoded as UTF-8 with U+FFFD for what is not UTF-8;
- an added token that is not special (an extratoken) is its own text, and the pieces of text
  around it are joined with one space;
- transformers' "clean up tokenization spaces" (" ." -> ".", " n't" -> "n't", ...) is applied only
  where `tokenizer_config.json` sets `clean_up_tokenization_spaces` to true. Where it does not say,
  transformers 4.46 and later do not apply it, 4.45 and earlier did (checked in their sources):
  the reference's figures depend on the transformers it ran with, so `load_tokenizer` can force
  either. It changes `gen_len` (a space less each time) and, through " n't", ROUGE a little;
- an id outside the vocabulary, on which the slow tokenizer fails, is a HarnessError.

Checked once by hand (2026-11-28) against transformers 4.57.6's GPT2Tokenizer on a tokenizer
trained here, with and without five extratokens in added_tokens.json, cleanup on and off: the same
ids for 604 texts (generated prompts and summaries, odd spacing, `<|endoftext|>` inside a text,
non-ASCII, truncated too) and the same text for 2,604 id sequences (EOS padding, and random ids:
bytes that are not UTF-8, EOS in the middle, extratokens). Not checked: GPT-J's own files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.errors import HarnessError

EOS_TOKEN = "<|endoftext|>"  # GPT-2's and GPT-J's EOS (and BOS, UNK; the reference pads with it)
GPTJ_EOS_ID = 50256
GPTJ_VOCAB_SIZE = 50400  # with the 143 extratokens
PROMPT_MAX_TOKENS = 1919  # the reference truncates each prompt to this many tokens (dataset.py)
MODEL_MAX_LENGTH = 2048

VOCAB_JSON, MERGES_TXT, TOKENIZER_JSON = "vocab.json", "merges.txt", "tokenizer.json"
ADDED_TOKENS_JSON = "added_tokens.json"
SPECIAL_TOKENS_MAP_JSON, TOKENIZER_CONFIG_JSON = "special_tokens_map.json", "tokenizer_config.json"
_MERGES_HEADER = "#version: 0.2"
_CLEAN_UPS = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)  # fmt: skip


@dataclass(frozen=True)
class BpeTokenizer:
    """A byte-level BPE tokenizer in GPT-2's format, encoding and decoding as the reference does."""

    tokenizer: Tokenizer  # BPE model (vocab.json's tokens), special and added tokens
    source: str  # the directory it was read from, for messages
    eos_id: int
    special_ids: frozenset[int]  # dropped when decoding
    added_tokens: Mapping[int, str]  # added tokens that are not special: decoded as their text
    clean_up_tokenization_spaces: bool

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str, max_tokens: int | None = None) -> list[int]:
        """The text's token ids; the first `max_tokens` of them if given (the reference truncates
        prompts on the right)."""
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=False).ids
        return ids if max_tokens is None else ids[:max_tokens]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of generated ids, as the reference's `batch_decode(skip_special_tokens=True)`
        gives it (see the module's docstring)."""
        size = self.vocab_size
        pieces: list[str] = []
        run: list[int] = []
        for token in ids:
            token = int(token)
            if not 0 <= token < size:
                raise HarnessError(
                    f"token id {token} is not in tokenizer {self.source} ({size} tokens): "
                    "output of another model, or not token ids?"
                )
            if token in self.special_ids:
                continue
            if token in self.added_tokens:
                if run:
                    text = self.tokenizer.decode(run, skip_special_tokens=False)
                    if text:  # as the reference: an empty run adds no piece before an added token
                        pieces.append(text)
                    run = []
                pieces.append(self.added_tokens[token])
            else:
                run.append(token)
        if run:
            pieces.append(self.tokenizer.decode(run, skip_special_tokens=False))
        text = " ".join(pieces)
        if self.clean_up_tokenization_spaces:
            for before, after in _CLEAN_UPS:
                text = text.replace(before, after)
        return text


def load_tokenizer(
    directory: Path,
    *,
    clean_up_tokenization_spaces: bool | None = None,
    default_eos: str = EOS_TOKEN,
) -> BpeTokenizer:
    """The tokenizer of a checkpoint directory: vocab.json + merges.txt (what the reference's slow
    tokenizer reads) or, without them, tokenizer.json. `clean_up_tokenization_spaces` overrides the
    directory's tokenizer_config.json (None: as it says, else off). `default_eos`: the EOS where
    the directory's JSON files name none (GPT-2's `<|endoftext|>`; Llama's tokenizer.json, read
    here too, has `</s>`)."""
    vocab_path, merges_path = directory / VOCAB_JSON, directory / MERGES_TXT
    if vocab_path.exists() or merges_path.exists():
        for path in (vocab_path, merges_path):
            if not path.is_file():
                raise HarnessError(
                    f"GPT-2 BPE tokenizer {directory} has no {path.name}: it needs {VOCAB_JSON} "
                    f"and {MERGES_TXT} together, as a Hugging Face checkpoint ships them"
                )
        tokenizer, added = _from_vocab_and_merges(directory)
    elif (directory / TOKENIZER_JSON).is_file():
        tokenizer, added = _from_tokenizer_json(directory)
    else:
        raise HarnessError(
            f"no GPT-2 BPE tokenizer in {directory}: it needs {VOCAB_JSON} and {MERGES_TXT} "
            f"(or {TOKENIZER_JSON}), as GPT-J's Hugging Face checkpoint ships them"
        )
    config = _optional_json(directory / TOKENIZER_CONFIG_JSON)
    special_names = _special_token_names(directory, config, default_eos)
    eos_name = _token_name(config.get("eos_token")) or default_eos
    tokenizer.add_special_tokens([AddedToken(name, special=True) for name in special_names])
    eos_id = tokenizer.token_to_id(eos_name)
    if eos_id is None:
        raise HarnessError(f"GPT-2 BPE tokenizer {directory} has no EOS token {eos_name!r}")
    # Every one has an id now: add_special_tokens gave the ones the vocabulary lacked new ids.
    ids = (tokenizer.token_to_id(name) for name in special_names)
    special_ids = frozenset(i for i in ids if i is not None)
    if clean_up_tokenization_spaces is None:
        clean_up_tokenization_spaces = config.get("clean_up_tokenization_spaces") is True
    return BpeTokenizer(
        tokenizer=tokenizer,
        source=str(directory),
        eos_id=eos_id,
        special_ids=special_ids,
        added_tokens={i: name for i, name in added.items() if i not in special_ids},
        clean_up_tokenization_spaces=clean_up_tokenization_spaces,
    )


def train_tokenizer(texts: Iterable[str], directory: Path, vocab_size: int = 2048) -> BpeTokenizer:
    """Train a byte-level BPE of `vocab_size` tokens on texts and save it in GPT-J's files: the 256
    byte symbols, the merges, then `<|endoftext|>` as the last id (GPT-2's layout). The same texts
    give the same files."""
    if vocab_size <= 257:
        raise HarnessError(
            f"a byte-level BPE vocabulary needs more than 257 tokens, not {vocab_size}"
        )
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - 1,  # the EOS comes last
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    model = json.loads(tokenizer.to_str())["model"]
    vocab: dict[str, int] = dict(model["vocab"])
    vocab[EOS_TOKEN] = len(vocab)
    merges = [_merge_pair(merge) for merge in model["merges"]]
    _save(directory, vocab, merges)
    return load_tokenizer(directory)


def _save(directory: Path, vocab: Mapping[str, int], merges: Sequence[tuple[str, str]]) -> None:
    """vocab.json, merges.txt, tokenizer.json and the two small JSON files of GPT-J's checkpoint."""
    ordered = dict(sorted(vocab.items(), key=lambda item: item[1]))
    write_text_atomic(directory / VOCAB_JSON, json.dumps(ordered, ensure_ascii=False) + "\n")
    # The slow tokenizer drops the first line and whatever follows the last newline.
    lines = [_MERGES_HEADER, *(f"{a} {b}" for a, b in merges)]
    write_text_atomic(directory / MERGES_TXT, "\n".join(lines) + "\n")
    tokenizer = _bpe_tokenizer(ordered, list(merges))
    tokenizer.add_special_tokens([AddedToken(EOS_TOKEN, special=True)])
    write_text_atomic(directory / TOKENIZER_JSON, tokenizer.to_str(pretty=True) + "\n")
    specials = {"bos_token": EOS_TOKEN, "eos_token": EOS_TOKEN, "unk_token": EOS_TOKEN}
    write_text_atomic(directory / SPECIAL_TOKENS_MAP_JSON, json.dumps(specials, indent=2) + "\n")
    config = {
        "add_prefix_space": False,
        **specials,
        "model_max_length": MODEL_MAX_LENGTH,
        "tokenizer_class": "GPT2Tokenizer",
    }
    write_text_atomic(directory / TOKENIZER_CONFIG_JSON, json.dumps(config, indent=2) + "\n")


def _bpe_tokenizer(vocab: dict[str, int], merges: list[tuple[str, str]]) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(vocab, merges))
    # GPT-2's: its word pattern, no space added before the text, bytes mapped back on decoding.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def _from_vocab_and_merges(directory: Path) -> tuple[Tokenizer, dict[int, str]]:
    vocab_path = directory / VOCAB_JSON
    vocab = _read_json(vocab_path)
    if not isinstance(vocab, dict) or not all(
        isinstance(token, str) and isinstance(i, int) and not isinstance(i, bool)
        for token, i in vocab.items()
    ):
        raise HarnessError(f"{vocab_path} is not a GPT-2 vocabulary: a JSON object token -> id")
    merges_path = directory / MERGES_TXT
    try:
        text = merges_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise HarnessError(f"cannot read {merges_path}: {error}") from error
    merges = []
    # As the slow tokenizer reads it: the first line is the "#version" header, and what follows
    # the last newline is dropped.
    for number, line in enumerate(text.split("\n")[1:-1], start=2):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise HarnessError(f"{merges_path}: line {number} is not a merge 'a b': {line!r}")
        merges.append((parts[0], parts[1]))
    try:
        tokenizer = _bpe_tokenizer(vocab, merges)
    except Exception as error:  # tokenizers raises plain Exception (a merge of unknown tokens)
        raise HarnessError(
            f"{vocab_path} and {merges_path} are not one BPE vocabulary: {error}"
        ) from error
    added = _optional_json(directory / ADDED_TOKENS_JSON)
    extras = sorted(((i, name) for name, i in added.items()), key=lambda item: item[0])
    for i, name in extras:
        if vocab.get(name) == i:
            continue
        tokenizer.add_tokens([AddedToken(name, special=False)])
        if tokenizer.token_to_id(name) != i:
            # tokenizers numbers added tokens on from the vocabulary's end, as GPT-J's file does.
            raise HarnessError(
                f"{directory / ADDED_TOKENS_JSON}: token {name!r} has id {i}, but the added tokens "
                "must follow the vocabulary's ids without gaps"
            )
    return tokenizer, dict(extras)


def _from_tokenizer_json(directory: Path) -> tuple[Tokenizer, dict[int, str]]:
    path = directory / TOKENIZER_JSON
    document = _read_json(path)
    model = document.get("model") if isinstance(document, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise HarnessError(f"{path} is not a BPE tokenizer (its model must be of type BPE)")
    try:
        tokenizer = Tokenizer.from_str(json.dumps(document))
    except Exception as error:  # tokenizers raises plain Exception
        raise HarnessError(f"{path} is not a tokenizers file: {error}") from error
    added = {
        int(entry["id"]): str(entry["content"])
        for entry in document.get("added_tokens") or []
        if not entry.get("special")
    }
    return tokenizer, added


def _special_token_names(directory: Path, config: Mapping[str, Any], default: str) -> list[str]:
    """The special tokens: those special_tokens_map.json (or tokenizer_config.json) names, and
    `default` (`<|endoftext|>`, GPT2Tokenizer's default for each)."""
    names = [default]
    special_map = _optional_json(directory / SPECIAL_TOKENS_MAP_JSON)
    for source in (special_map, config):
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            name = _token_name(source.get(key))
            if name and name not in names:
                names.append(name)
    return names


def _token_name(value: Any) -> str | None:
    """A special token as the JSON files give it: its text, or an object with its "content"."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def _merge_pair(merge: Any) -> tuple[str, str]:
    """A merge from tokenizer.json: ["a", "b"] (tokenizers 0.20 and later) or "a b"."""
    a, b = merge.split(" ") if isinstance(merge, str) else merge
    return str(a), str(b)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except OSError as error:
        raise HarnessError(f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise HarnessError(f"{path} is not JSON: {error}") from error


def _optional_json(path: Path) -> dict[str, Any]:
    """A JSON object file the checkpoint may lack ({} then)."""
    if not path.exists():
        return {}
    document = _read_json(path)
    if not isinstance(document, dict):
        raise HarnessError(f"{path} is not a JSON object")
    return document
