"""From a predicted span of WordPiece tokens back to the words of the paragraph, as the reference
does it (accuracy-squad.py's write_predictions and get_final_text).

The tokens are lower-cased, accent-stripped and split at punctuation, so they are not the answer;
the paragraph words they came from may hold more than the span ("Smith's" for "smith"). The answer
is the part of those words that lines up with the tokens, character for character once spaces are
removed; where the two do not line up, the whole words.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlperf_harness.datasets.squad.tokenizer import basic_tokenize


def wordpiece_text(tokens: Sequence[str]) -> str:
    """The tokens as text: continuations ("##ing") joined to what precedes them."""
    text = " ".join(tokens).replace(" ##", "").replace("##", "")
    return " ".join(text.split())


def final_text(predicted: str, original: str) -> str:
    """The part of `original` (paragraph words joined by spaces) that `predicted` (their
    normalized tokens' text) stands for; `original` itself when no character alignment exists."""
    normalized = " ".join(basic_tokenize(original))
    start = normalized.find(predicted)
    if start == -1:
        return original
    end = start + len(predicted) - 1
    original_chars = _non_space_positions(original)
    normalized_chars = _non_space_positions(normalized)
    # Tokenizing removed or added characters other than spaces: no one-to-one alignment.
    if len(original_chars) != len(normalized_chars):
        return original
    rank = {position: k for k, position in enumerate(normalized_chars)}
    if start not in rank or end not in rank:  # the match starts or ends on a space
        return original
    return original[original_chars[rank[start]] : original_chars[rank[end]] + 1]


def _non_space_positions(text: str) -> list[int]:
    """Where each character other than " " is (only " ": other spaces count as characters)."""
    return [position for position, char in enumerate(text) if char != " "]
