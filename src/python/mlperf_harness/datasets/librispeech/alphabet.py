"""RNN-T's 28-character alphabet and its transcripts, as MLCommons' reference reads them.

The labels are those of the reference's `rnnt.toml` and `accuracy_eval.py`: space, a-z, apostrophe
(ids 0..27); the model's 29th output, id 28, is the blank. A transcript is normalised as the
reference's manifest does for LibriSpeech (lower case, punctuation other than the apostrophe turned
into spaces, whitespace collapsed); a character that is still outside the alphabet (a digit, an
accented letter: the reference's cleaners would spell or transliterate it, which this harness does
not) is refused in one line rather than silently dropped, so a WER is never computed against a
transcript other than the one given.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError

LABELS = (" ", *string.ascii_lowercase, "'")
BLANK = len(LABELS)  # 28: the model's last output
SYMBOLS = len(LABELS) + 1  # 29 outputs with the blank
_IDS = {label: index for index, label in enumerate(LABELS)}
# The reference removes string.punctuation except "+", "&" and its own labels ("'"), as spaces.
_PUNCTUATION = string.punctuation.replace("+", "").replace("&", "").replace("'", "")
_TO_SPACE = str.maketrans(_PUNCTUATION, " " * len(_PUNCTUATION))
_WHITESPACE = re.compile(r"\s+")


def normalize_transcript(text: str, where: str) -> str:
    """The transcript as the reference scores it; `where` names it in the one-line refusal."""
    cleaned = text.lower().translate(_TO_SPACE).replace("&", " and ").replace("+", " plus ")
    cleaned = _WHITESPACE.sub(" ", cleaned).strip()
    outside = sorted({char for char in cleaned if char not in _IDS})
    if outside:
        shown = "".join(outside)
        raise HarnessError(
            f"{where}: the transcript has characters outside RNN-T's alphabet (a-z, space, "
            f"apostrophe): {shown!r} in {text.strip()[:60]!r}"
        )
    return cleaned


def encode(text: str) -> npt.NDArray[np.int64]:
    """Symbol ids of a normalised transcript."""
    return np.array([_IDS[char] for char in text], dtype=np.int64)


def decode(symbols: Sequence[int] | npt.NDArray[np.integer[Any]]) -> str:
    """Text of symbol ids, as the reference's accuracy script joins them (a blank or an id out of
    range would raise there too: refused in one line)."""
    ids = [int(symbol) for symbol in symbols]
    bad = [symbol for symbol in ids if not 0 <= symbol < len(LABELS)]
    if bad:
        raise HarnessError(f"symbol id {bad[0]} is not one of RNN-T's {len(LABELS)} labels")
    return "".join(LABELS[symbol] for symbol in ids)
