"""From predicted tokens back to the paragraph's own text, as the reference's get_final_text."""

from __future__ import annotations

from mlperf_harness.datasets.squad.answer_text import final_text, wordpiece_text


def test_wordpieces_are_joined() -> None:
    assert wordpiece_text(["un", "##aff", "##able", "fox"]) == "unaffable fox"
    assert wordpiece_text(["##s", "dog"]) == "s dog"  # a leading continuation loses its marks
    assert wordpiece_text(["smith", "'", "s"]) == "smith ' s"


def test_the_span_is_cut_out_of_the_original_words() -> None:
    # The classic: the words are "Steve Smith's", the tokens only "steve smith".
    assert final_text("steve smith", "Steve Smith's") == "Steve Smith"
    assert final_text("1895", "(1895-1943).") == "1895"
    # Case and accents come back from the original.
    assert final_text("cafe", "Café.") == "Café"
    assert final_text("naive resume", "NAÏVE Résumé,") == "NAÏVE Résumé"


def test_without_an_alignment_the_original_words_are_the_answer() -> None:
    # Not found in the normalized words (an [UNK], say): the words as they are.
    assert final_text("[UNK]", "Ωmega") == "Ωmega"
    assert final_text("dog", "the fox") == "the fox"
    # A no-break space inside a word is a character of the original but a space once tokenized:
    # the two no longer align character for character.
    assert final_text("b", "a\u00a0b") == "a\u00a0b"
    # A match that starts inside a token but on a space boundary of the normalized text.
    assert final_text(" fox", "the fox") == "the fox"
