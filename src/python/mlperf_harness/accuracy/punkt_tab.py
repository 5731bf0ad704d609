"""A small English Punkt model in nltk's punkt_tab format: nltk's sentence model is not on PyPI
(nltk.download fetches it), yet the real nltk code path should run in tests and under GPT-J's
stand-in, whose generated summaries it splits (the stand-in writes it beside its data; its
measured ROUGE is scored with it, as its runs are).

The format nltk 3.9+ loads (nltk.tokenize.punkt.load_punkt_params), one folder per language under
`<nltk_data>/tokenizers/punkt_tab/`:

- abbrev_types.txt: one abbreviation a line, lower case, without its final period ("u.s");
- collocations.tab: "word<TAB>word" pairs that a period between does not split;
- sent_starters.txt: one word a line that tends to start a sentence;
- ortho_context.tab: "word<TAB>flags", where each word was seen upper or lower case (bit 1:
  upper case at a sentence's start, 2: upper case inside one, 4: lower case at a start, 5: lower
  case inside one).

Which boundaries this model finds is not what the real English model finds: tests that compare two
scorers give both the same model, and a run on the official data needs the real one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

ABBREVIATIONS = ("dr", "mr", "mrs", "prof", "st", "u.s", "u.k", "e.g", "i.e", "jan", "feb")
SENTENCE_STARTERS = ("the", "he", "she", "it", "but", "in", "a")
COLLOCATIONS = (("##number##", "percent"),)
_UPPER_AT_START, _LOWER_INSIDE = 1 << 1, 1 << 5
ORTHO_CONTEXT = {
    "the": _UPPER_AT_START | _LOWER_INSIDE,
    "he": _UPPER_AT_START | _LOWER_INSIDE,
    "smith": 1 << 2,  # a name: upper case inside sentences
}


def write_punkt_tab(
    nltk_data: Path,
    abbreviations: Iterable[str] = ABBREVIATIONS,
    language: str = "english",
) -> Path:
    """Write the model under nltk_data (created if need be); returns its language folder."""
    folder = nltk_data / "tokenizers" / "punkt_tab" / language
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "abbrev_types.txt").write_text("\n".join(abbreviations) + "\n", encoding="utf-8")
    (folder / "sent_starters.txt").write_text("\n".join(SENTENCE_STARTERS) + "\n", encoding="utf-8")
    (folder / "collocations.tab").write_text(
        "".join(f"{a}\t{b}\n" for a, b in COLLOCATIONS), encoding="utf-8"
    )
    (folder / "ortho_context.tab").write_text(
        "".join(f"{word}\t{flags}\n" for word, flags in ORTHO_CONTEXT.items()), encoding="utf-8"
    )
    return folder
