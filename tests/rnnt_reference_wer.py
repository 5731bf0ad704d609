"""MLCommons' accuracy_eval.py for RNN-T, reimplemented from reading it (the script itself imports
the reference's text cleaners, which need packages this repository does not carry): its int64
decoding of each response, its label join, its whitespace split and its word Levenshtein as
metrics.py writes it (the shorter list as the row), summed over every response in the log. Shared
by the WER tests and the stand-in's end-to-end runs."""

from __future__ import annotations

import array
import json
from pathlib import Path

from mlperf_harness.datasets.librispeech.alphabet import LABELS, encode


def reference_levenshtein(a: list[str], b: list[str]) -> int:
    n, m = len(a), len(b)
    if n > m:
        a, b = b, a
        n, m = m, n
    current = list(range(n + 1))
    for i in range(1, m + 1):
        previous, current = current, [i] + [0] * n
        for j in range(1, n + 1):
            add, delete = previous[j] + 1, current[j - 1] + 1
            change = previous[j - 1]
            if a[j - 1] != b[i - 1]:
                change = change + 1
            current[j] = min(add, delete, change)
    return current[n]


def reference_accuracy_line(log: Path, transcripts: list[str]) -> str:
    """accuracy_eval.py's steps, in its order, on the manifest's symbol ids."""
    labels = list(LABELS)
    results = json.loads(log.read_text())
    hypotheses, references = [], []
    for result in results:
        hypotheses.append(array.array("q", bytes.fromhex(result["data"])).tolist())
        references.append(encode(transcripts[result["qsl_idx"]]).tolist())
    labels_map = dict(enumerate(labels))
    references_text = ["".join(labels_map[c] for c in t) for t in references]
    hypotheses_text = ["".join(labels_map[c] for c in t) for t in hypotheses]
    scores = words = 0
    for h, r in zip(hypotheses_text, references_text, strict=True):
        words += len(r.split())
        scores += reference_levenshtein(h.split(), r.split())
    wer = scores / words
    return "Word Error Rate: {:}%, accuracy={:}%".format(wer * 100, (1 - wer) * 100)  # noqa: UP032 (the script's own words)
