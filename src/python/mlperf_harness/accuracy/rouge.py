"""ROUGE of generated summaries, as MLCommons' GPT-J and Llama2-70B accuracy scripts compute it.

The rules of `language/gpt-j/evaluation.py`, which `language/llama2-70b/evaluate-accuracy.py` shares:

- each response of the accuracy log is one sample's generated token ids (int64, or int32 with
  `--dtype int32`), EOS and any padding after it included. A sample logged more than once counts
  once, with its FIRST response (unlike the SQuAD script, which keeps the last);
- the ids are decoded with the model's tokenizer, special tokens dropped (for GPT-J:
  datasets.cnn_dailymail.tokenizer; any `decode` callable does);
- predictions and references are stripped, split into sentences by nltk's `sent_tokenize` (Punkt,
  English `punkt_tab` model) and the sentences joined with newlines, for ROUGE-Lsum;
- each prediction is scored against its sample's reference by `evaluate`'s "rouge" metric with
  `use_stemmer=True, use_aggregator=False`: that metric is rouge_score's RougeScorer over rouge1,
  rouge2, rougeL and rougeLsum with the Porter stemmer, keeping each score's F-measure; no
  bootstrap. Each figure is the plain mean of the samples' F-measures (np.mean, in log order),
  times 100, rounded to 4 places (numpy's rounding);
- `gen_len` is the sum of the postprocessed predictions' lengths in characters (newlines from the
  sentence join included), `gen_num` the number of samples scored. Llama2 adds `gen_tok_len`, the
  sum of the logged responses' token counts (before any is dropped), and `tokens_per_sample`.

MLCommons' submission checker reads the printed line with regular expressions ('rouge1': ...,
'gen_len': <digits>, 'tokens_per_sample': <digits>): `gptj_line` and `llama2_line` print it as the
scripts do under numpy 1, with plain Python numbers. (Under numpy 2 the scripts print
`'gen_len': np.int64(...)`, which the checker's GEN_LEN pattern cannot read.) GPT-J's ROUGE
figures are printed as numbers, `'rouge1': 42.9865`: evaluation.py prints them as strings
(`'rouge1': '42.9865'`) since October 2024 (mlcommons/inference c72a59f3), which the checker at
the `v5.0` tag cannot read (its ROUGE patterns want a digit right after `': `; the checker learnt
the quotes in 2a41918e, after the tag); the current checker reads both.

What was compared, and how. In CI (tests/mlperf_harness/accuracy/test_rouge.py): the reference
script cannot run here (it downloads GPT-J's tokenizer, nltk's data and the `evaluate` metric), so
the tests replay its steps with the same libraries as an independent oracle: dedup by first
qsl_idx, `np.frombuffer` of the hex data, the tokenizer's decode, `nltk.sent_tokenize` through
`nltk.data.path`, `RougeScorer(...).score(reference, prediction)` per sample as `evaluate`'s
rouge.py calls it, F-measures, np.mean and round; and ROUGE of small texts computed by hand.
nltk's English Punkt model is not on PyPI: the tests write a small punkt_tab model in its file
format, so nltk's real code path runs, but where it splits sentences differs from the real English
model (both sides of every comparison use the same model).
Once, by hand (2026-11-28, not in CI): MLCommons' evaluation.py and evaluate-accuracy.py (inference
commit b66003e), unmodified but for a stand-in `dataset.py` that only reads `targets` (theirs
tokenizes every prompt into torch tensors) and an empty `torch` module, with transformers 4.57.6,
evaluate 0.4.6 (its rouge.py read from a local folder), rouge_score 0.1.2, nltk 3.10.4, numpy 2;
our generated tokenizer posing as GPT-J's in an offline Hugging Face cache; the same small punkt
model; generated logs of 500 and 900 samples (int64, int32) with duplicates and EOS padding: the
same figures as `gptj_line` and `llama2_line`, to the last digit. Not compared: the real English
punkt_tab model, GPT-J's real tokenizer files, transformers 4.45 and older (which clean up
tokenization spaces by default; see datasets.cnn_dailymail.tokenizer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mlperf_harness.errors import HarnessError
from mlperf_harness.loadgen.accuracy_log import read_accuracy_log

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")  # evaluate's default, in its order
TOKEN_DTYPES: dict[str, type[np.signedinteger[Any]]] = {"int64": np.int64, "int32": np.int32}
PUNKT_LANGUAGE = "english"  # sent_tokenize's default
PUNKT_FOLDER = "tokenizers/punkt_tab/english"  # under an nltk_data directory

Decode = Callable[[list[int]], str]


@dataclass(frozen=True)
class RougeTarget:
    """A benchmark's reference figures (MLCommons' submission checker) and what else it checks."""

    rouge1: float
    rouge2: float
    rougeL: float
    gen_len: int | None = None  # GPT-J: at least 90% of it
    tokens_per_sample: float | None = None  # Llama2: within 10% of it

    def misses(self, scores: RougeScores, fraction: float) -> list[str]:
        """What `scores` fall short of for the 99% (fraction 0.99) or 99.9% target; [] if none."""
        misses = [
            f"{name} {value} < {fraction} x {reference}"
            for name, value, reference in (
                ("rouge1", scores.rouge1, self.rouge1),
                ("rouge2", scores.rouge2, self.rouge2),
                ("rougeL", scores.rougeL, self.rougeL),
            )
            if value < reference * fraction
        ]
        if self.gen_len is not None and scores.gen_len < self.gen_len * 0.9:
            misses.append(f"gen_len {scores.gen_len} < 0.9 x {self.gen_len}")
        if self.tokens_per_sample is not None:
            low, high = self.tokens_per_sample * 0.9, self.tokens_per_sample * 1.1
            if not low <= scores.tokens_per_sample <= high:
                misses.append(
                    f"tokens_per_sample {scores.tokens_per_sample} outside "
                    f"{self.tokens_per_sample} +- 10%"
                )
        return misses


GPTJ_TARGET = RougeTarget(42.9865, 20.1235, 29.9881, gen_len=4_016_878)
LLAMA2_70B_TARGET = RougeTarget(44.4312, 22.0352, 28.6162, tokens_per_sample=294.45)


@dataclass(frozen=True)
class Generation:
    qsl_idx: int
    token_ids: npt.NDArray[np.signedinteger[Any]]  # as logged: EOS and padding included


@dataclass(frozen=True)
class RougeScores:
    rouge1: float  # percent, rounded to 4 places as the reference rounds
    rouge2: float
    rougeL: float
    rougeLsum: float
    gen_len: int  # characters of the postprocessed predictions
    gen_num: int  # samples scored
    gen_tok_len: int  # logged tokens (Llama2's figure)

    @property
    def tokens_per_sample(self) -> float:
        return round(self.gen_tok_len / self.gen_num, 1)

    def _rouge(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in ROUGE_TYPES}

    def gptj_line(self) -> str:
        """The dict GPT-J's evaluation.py prints, its ROUGE figures as numbers (as it printed them
        until October 2024, and as GPT-J's last round, v5.0, reads them: see the module's doc)."""
        return repr({**self._rouge(), "gen_len": self.gen_len, "gen_num": self.gen_num})

    def llama2_line(self) -> str:
        """The dict Llama2-70B's evaluate-accuracy.py prints."""
        return repr(
            {
                **self._rouge(),
                "gen_len": self.gen_len,
                "gen_num": self.gen_num,
                "gen_tok_len": self.gen_tok_len,
                "tokens_per_sample": self.tokens_per_sample,
            }
        )


class SentenceSplitter:
    """nltk's Punkt sentence splitter with its English punkt_tab model: what `nltk.sent_tokenize`
    uses. The model is looked up in `nltk_data` if given, then on nltk's own search path."""

    def __init__(self, nltk_data: Path | None = None) -> None:
        import nltk
        from nltk.tokenize.punkt import PunktTokenizer

        if nltk_data is not None and str(nltk_data) not in nltk.data.path:
            # On nltk's search path, not passed to find(): nltk 3.10 opens model files only under
            # the directories of nltk.data.path (its pathsec sandbox).
            nltk.data.path.insert(0, str(nltk_data))
        try:
            self._punkt = PunktTokenizer(PUNKT_LANGUAGE)
        except LookupError:
            home = nltk_data if nltk_data is not None else Path(nltk.data.path[0])
            raise HarnessError(
                "nltk's English sentence model (punkt_tab) is missing or incomplete: put the "
                f"folder at {home / PUNKT_FOLDER}/ (nltk.download('punkt_tab', download_dir="
                f"'{home}') fetches it on a machine with internet; nltk also searches NLTK_DATA)"
            ) from None

    def split(self, text: str) -> list[str]:
        sentences: list[str] = self._punkt.tokenize(text)
        return sentences


def postprocess(text: str, splitter: SentenceSplitter) -> str:
    """A text as the scripts score it: stripped, one sentence a line (ROUGE-Lsum's unit)."""
    return "\n".join(splitter.split(text.strip()))


def rouge_fmeasures(
    predictions: Sequence[str], references: Sequence[str]
) -> dict[str, list[float]]:
    """Each prediction's F-measure against its reference, per ROUGE type: evaluate's rouge metric
    with use_stemmer=True and use_aggregator=False."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    fmeasures: dict[str, list[float]] = {name: [] for name in ROUGE_TYPES}
    for prediction, reference in zip(predictions, references, strict=True):
        scores = scorer.score(reference, prediction)  # (target, prediction)
        for name in ROUGE_TYPES:
            fmeasures[name].append(scores[name].fmeasure)
    return fmeasures


def score_texts(
    predictions: Sequence[str],
    references: Sequence[str],
    splitter: SentenceSplitter,
    gen_tok_len: int = 0,
) -> RougeScores:
    """The figures of decoded predictions against their references (same order)."""
    if not predictions:
        raise HarnessError("no generated summaries to score")
    predictions = [postprocess(text, splitter) for text in predictions]
    references = [postprocess(text, splitter) for text in references]
    fmeasures = rouge_fmeasures(predictions, references)
    # np.mean (pairwise sums) and numpy's round, as the scripts compute them: a figure on a
    # rounding edge comes out the same.
    figures = {
        name: float(round(np.mean(np.asarray(values, np.float64)) * 100, 4))
        for name, values in fmeasures.items()
    }
    return RougeScores(
        **figures,
        gen_len=sum(len(text) for text in predictions),
        gen_num=len(predictions),
        gen_tok_len=gen_tok_len,
    )


def read_generations(
    accuracy_log: Path, sample_count: int, dtype: str = "int64"
) -> list[Generation]:
    """Each logged sample's token ids, first response only, in log order."""
    if dtype not in TOKEN_DTYPES:
        raise HarnessError(f"token dtype {dtype!r} is not one of {', '.join(TOKEN_DTYPES)}")
    item = np.dtype(TOKEN_DTYPES[dtype])
    generations: list[Generation] = []
    seen: set[int] = set()
    for number, response in enumerate(read_accuracy_log(accuracy_log)):
        index = response.qsl_idx
        if not 0 <= index < sample_count:
            raise HarnessError(
                f"{accuracy_log}: response {number} has qsl_idx {index}, outside the "
                f"{sample_count} samples of the data set (a log of another data set?)"
            )
        if index in seen:
            continue
        if len(response.data) % item.itemsize:
            raise HarnessError(
                f"{accuracy_log}: response {number} (qsl_idx {index}) holds "
                f"{len(response.data)} bytes, not {dtype} token ids (is the dtype right?)"
            )
        seen.add(index)
        generations.append(Generation(index, np.frombuffer(response.data, item)))
    if not generations:
        raise HarnessError(f"{accuracy_log} holds no responses to score")
    return generations


def score_generations(
    generations: Sequence[Generation],
    references: Sequence[str],
    decode: Decode,
    splitter: SentenceSplitter,
    source: str = "accuracy log",
) -> RougeScores:
    """The figures of decoded generations against the references of their samples."""
    predictions = []
    for generation in generations:
        try:
            predictions.append(decode(generation.token_ids.tolist()))
        except HarnessError as error:
            raise HarnessError(f"{source}: qsl_idx {generation.qsl_idx}: {error}") from None
    return score_texts(
        predictions,
        [references[generation.qsl_idx] for generation in generations],
        splitter,
        gen_tok_len=sum(len(generation.token_ids) for generation in generations),
    )


def score_accuracy_log(
    accuracy_log: Path,
    references: Sequence[str],
    decode: Decode,
    splitter: SentenceSplitter,
    dtype: str = "int64",
) -> RougeScores:
    """The figures of a generative accuracy run's mlperf_log_accuracy.json; references by qsl_idx."""
    generations = read_generations(accuracy_log, len(references), dtype)
    return score_generations(generations, references, decode, splitter, str(accuracy_log))
