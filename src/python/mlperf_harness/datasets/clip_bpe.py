"""CLIP's byte-level BPE tokenizer: what SDXL's two tokenizers (`transformers`' CLIPTokenizer with
SDXL's tokenizer/ and tokenizer_2/ files) and the CLIP score's `open_clip.tokenize` compute, from a
merges file in either published form (`merges.txt`, the Hugging Face one, or open_clip's
`bpe_simple_vocab_16e6.txt.gz`).

The vocabulary follows from the merges as CLIP builds it: the 256 byte characters, the same with
`</w>`, one entry per merge (the pair joined), then `<|startoftext|>` and `<|endoftext|>`; SDXL's
49,408 ids are that list for 48,894 merges. Text is cleaned as CLIP cleans it (HTML entities
unescaped twice, whitespace collapsed, lower case), split by CLIP's pattern, each piece's UTF-8
bytes mapped to characters and merged by rank. One difference: CLIP first repairs mojibake with
`ftfy`, which is not a dependency here; captions in plain UTF-8 (COCO's) are unaffected.

A row is [start] + tokens + [end], cut to 77 with the end token kept last, then padded: with the end
token (SDXL's first tokenizer), or with id 0 ("!": SDXL's second tokenizer and open_clip).

`train_merges` learns a small merges list from generated captions: the stand-in's vocabulary.
"""

from __future__ import annotations

import collections
import functools
import gzip
import html
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import regex

from mlperf_harness.errors import HarnessError

CONTEXT = 77
START, END = "<|startoftext|>", "<|endoftext|>"
_PATTERN = regex.compile(
    r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+""",
    regex.IGNORECASE,
)
# open_clip reads this many lines of its merges file (49152 - 256 - 2 merges after the header).
_OPEN_CLIP_MERGES = 49152 - 256 - 2


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map of the 256 bytes to printable characters."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(printable, (chr(c) for c in chars), strict=True))


def _merged(word: list[str], pair: tuple[str, str]) -> list[str]:
    """`word` with every occurrence of the adjacent `pair` joined, left to right."""
    out: list[str] = []
    i = 0
    while i < len(word):
        if i < len(word) - 1 and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def clean(text: str) -> str:
    text = html.unescape(html.unescape(text)).strip()
    cleaned: str = regex.sub(r"\s+", " ", text)
    return cleaned.strip().lower()


class ClipTokenizer:
    def __init__(self, merges: Sequence[tuple[str, str]]) -> None:
        vocab = list(bytes_to_unicode().values())
        vocab += [v + "</w>" for v in vocab]
        vocab += ["".join(pair) for pair in merges]
        vocab += [START, END]
        self.encoder = {token: i for i, token in enumerate(vocab)}
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.start_id, self.end_id = self.encoder[START], self.encoder[END]
        self._cache: dict[str, list[str]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.encoder)

    def _bpe(self, piece: str) -> list[str]:
        if piece in self._cache:
            return self._cache[piece]
        word = [*piece[:-1], piece[-1] + "</w>"]
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda pair: self.ranks.get(pair, float("inf")))
            if best not in self.ranks:
                break
            word = _merged(word, best)
        self._cache[piece] = word
        return word

    def encode(self, text: str) -> list[int]:
        byte_map = bytes_to_unicode()
        ids: list[int] = []
        for piece in _PATTERN.findall(clean(text)):
            chars = "".join(byte_map[b] for b in piece.encode("utf-8"))
            ids += [self.encoder[token] for token in self._bpe(chars)]
        return ids

    def row(self, text: str, pad_id: int, context: int = CONTEXT) -> npt.NDArray[np.int64]:
        """[start] + tokens + [end], cut to `context` with the end kept last, padded with pad_id."""
        ids = [self.start_id, *self.encode(text), self.end_id]
        if len(ids) > context:
            ids = ids[:context]
            ids[-1] = self.end_id
        out = np.full(context, pad_id, np.int64)
        out[: len(ids)] = ids
        return out


def read_merges(path: Path) -> list[tuple[str, str]]:
    """The merges of a `merges.txt` ("#version" header) or open_clip's `.txt.gz` (a header line,
    then the merges, of which open_clip reads the first 48,894); one line for another file."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        lines = raw.decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError, gzip.BadGzipFile) as error:
        raise HarnessError(f"cannot read CLIP merges file {path}: {error}") from error
    body = lines[1:]
    if path.suffix == ".gz":
        body = body[:_OPEN_CLIP_MERGES]
    merges = []
    for number, line in enumerate(body, start=2):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise HarnessError(
                f"{path} line {number} is not a BPE merge (two symbols): {line[:60]!r}"
            )
        merges.append((parts[0], parts[1]))
    if not merges:
        raise HarnessError(f"{path} holds no BPE merges")
    return merges


def merges_bytes(merges: Iterable[tuple[str, str]]) -> bytes:
    """merges.txt's bytes (Hugging Face's form, the header first)."""
    return ("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)).encode("utf-8")


def train_merges(texts: Iterable[str], count: int) -> list[tuple[str, str]]:
    """Up to `count` merges learned by byte-pair counting over the texts' pieces (ties broken by
    the pair itself, so the result is deterministic)."""
    byte_map = bytes_to_unicode()
    words: collections.Counter[tuple[str, ...]] = collections.Counter()
    for text in texts:
        for piece in _PATTERN.findall(clean(text)):
            chars = "".join(byte_map[b] for b in piece.encode("utf-8"))
            words[(*chars[:-1], chars[-1] + "</w>")] += 1
    merges: list[tuple[str, str]] = []
    for _ in range(count):
        pairs: collections.Counter[tuple[str, str]] = collections.Counter()
        for word, n in words.items():
            for i in range(len(word) - 1):
                pairs[(word[i], word[i + 1])] += n
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        joined: collections.Counter[tuple[str, ...]] = collections.Counter()
        for word, n in words.items():
            joined[tuple(_merged(list(word), best))] += n
        words = joined
    return merges
