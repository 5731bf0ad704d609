"""A generated stand-in for OpenOrca: instruction/answer pairs whose answers can be found in their
questions, in Llama 2's chat template.

Each pair's question asks for the key facts of a generated news report (the GPT-J stand-in's
articles: datasets/cnn_dailymail/synthetic.py) under one of a few instructions, with one of the
system prompts OpenOrca's GPT-4 rows use; the answer restates the report's lead, key figure and
outcome, one a line, each ending " .": what a small copying model can learn. Deterministic: pair
i depends only on (seed, i).
"""

from __future__ import annotations

import random

from mlperf_harness.datasets.cnn_dailymail.synthetic import generate_sample

SYSTEM_PROMPTS = (
    "You are an AI assistant. User will you give you a task. Your goal is to complete the task as "
    "faithfully as you can.",
    "You are a helpful assistant, who always provide explanation.",
    "",  # some rows have none: processorca's template without <<SYS>>
)
INSTRUCTIONS = (
    "Summarize the key facts of this news report, one per line.",
    "What are the three main points of the following article?",
    "Read the report below and list what happened, the key figure and the outcome.",
)


def answer_text(summary: str) -> str:
    """The answer as the model writes it: a space before each line's first word, so that the word
    is the same token as in the question."""
    return summary.replace("\n", "\n ")


def generate_pair(seed: int, index: int) -> tuple[str, str, str]:
    """(system prompt, question, reference answer) of pair `index` of the set of `seed`."""
    article = generate_sample(seed, index)
    rng = random.Random(f"open_orca:{seed}:{index}")
    question = f"{rng.choice(INSTRUCTIONS)}\n\n{article.article}"
    return rng.choice(SYSTEM_PROMPTS), question, article.summary
