"""BERT's WordPiece vocabulary: `vocab.txt`, one token per line, a token's id its line number.

Read as the reference's tokenizer (transformers' BertTokenizer) reads it: UTF-8 text with universal
newlines ("\\r\\n" and "\\r" end a line too), and a token listed twice gets the id of its last line.
The special tokens the feature layout needs must be there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.errors import HarnessError

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)


@dataclass(frozen=True)
class Vocabulary:
    tokens: tuple[str, ...]  # by id
    ids: Mapping[str, int]  # by token; for a token listed twice, its last line
    sha256: str  # of the file's bytes: the preprocessed data records it

    def __len__(self) -> int:
        return len(self.tokens)


def parse_vocab(data: bytes, source: str) -> Vocabulary:
    """The vocabulary a vocab.txt's bytes hold; `source` names the file in errors."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HarnessError(f"vocabulary {source} is not UTF-8 text: {error}") from error
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":  # the newline that ends the last line starts no token
        lines.pop()
    ids = {token: index for index, token in enumerate(lines)}
    missing = [token for token in SPECIAL_TOKENS if token not in ids]
    if missing:
        raise HarnessError(
            f"{source} is not a BERT WordPiece vocabulary: it lacks {' '.join(missing)} "
            f"(a vocab.txt lists one token per line, {' '.join(SPECIAL_TOKENS)} among them)"
        )
    return Vocabulary(tokens=tuple(lines), ids=ids, sha256=hashlib.sha256(data).hexdigest())


def load_vocab(path: Path) -> Vocabulary:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise HarnessError(f"cannot read vocabulary {path}: {error.strerror or error}") from error
    return parse_vocab(data, str(path))
