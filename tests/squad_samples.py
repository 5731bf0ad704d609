"""Small SQuAD v1.1 files and WordPiece vocabularies, written by tests (no download, no big file)."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Whole words: each is one token. Everything else made of ASCII letters and digits is spelled with
# letters and "##" letters, so only other characters (and words over 100 characters) are [UNK].
WORDS = [
    "the", "a", "an", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "where", "is",
    "what", "who", "did", "steve", "smith", "cafe", "naive", "resume", "un", "##aff", "##able",
    "alpha", "beta", "gamma", "delta", "year", "born", "was", "in", "of", "and",
]  # fmt: skip


def vocab_tokens(extra: list[str] | None = None) -> list[str]:
    letters = list(string.ascii_lowercase + string.digits)
    return [
        *SPECIALS,
        *string.punctuation,
        *letters,
        *(f"##{letter}" for letter in letters),
        *WORDS,
        *(extra or []),
    ]


def write_vocab(path: Path, tokens: list[str] | None = None) -> Path:
    path.write_text("".join(f"{token}\n" for token in tokens or vocab_tokens()), encoding="utf-8")
    return path


def answer(context: str, text: str) -> dict[str, Any]:
    """An answer at the first occurrence of text in the context."""
    return {"text": text, "answer_start": context.index(text)}


def squad_document(paragraphs: list[tuple[str, list[tuple[str, str, list[str]]]]]) -> Any:
    """A SQuAD v1.1 document: each paragraph is (context, [(id, question, [answer texts])])."""
    return {
        "version": "1.1",
        "data": [
            {
                "title": "generated",
                "paragraphs": [
                    {
                        "context": context,
                        "qas": [
                            {
                                "id": qas_id,
                                "question": question,
                                "answers": [answer(context, text) for text in answers],
                            }
                            for qas_id, question, answers in questions
                        ],
                    }
                    for context, questions in paragraphs
                ],
            }
        ],
    }


def write_squad(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def long_context(words: int) -> str:
    """`words` one-token words (alpha beta gamma delta ...), more than one window when long."""
    cycle = ["alpha", "beta", "gamma", "delta"]
    return " ".join(cycle[i % 4] for i in range(words))
