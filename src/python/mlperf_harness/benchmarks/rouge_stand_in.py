"""What the ROUGE stand-ins (GPT-J's, Llama's) share: their files in the scratch (built once, found
again by the record beside them), the sentence model their build scores held-out ROUGE with, and
the held-out ROUGE-1 below which a build is a bug."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic

from mlperf_harness.accuracy.punkt_tab import write_punkt_tab
from mlperf_harness.accuracy.rouge import SentenceSplitter
from mlperf_harness.benchmarks.stand_in_cli import run_stand_in, stand_in_parser
from mlperf_harness.errors import HarnessError
from mlperf_harness.generation.stand_in_files import R, ensure_built

REQUIRED_ROUGE1 = 50.0  # held-out ROUGE-1 a build must reach (noise scores ~2), or it is a bug


@dataclass(frozen=True)
class FileNames:
    """What a stand-in's files are called in its work directory."""

    model: str
    data: str
    tokenizer_dir: str = "tokenizer"
    nltk_data: str = "nltk_data"
    record: str = "stand_in.json"


@dataclass(frozen=True)
class StandInFiles(Generic[R]):
    """A built stand-in's files, and the record of what its build measured."""

    model: Path
    tokenizer_dir: Path
    data: Path
    nltk_data: Path
    record: R
    record_path: Path


def ensure_stand_in_files(
    work_dir: Path,
    names: FileNames,
    needed: Sequence[str],
    record_type: type[R],
    activity: str,
    announce: str,
    build: Callable[[], R],
) -> StandInFiles[R]:
    """The stand-in's files in `work_dir` (its model and the `needed` files), `build()` there when
    absent, saying `announce` first (generation/stand_in_files.ensure_built)."""
    model = work_dir / names.model
    record_path = work_dir / names.record
    record = ensure_built(
        work_dir,
        model,
        [work_dir / name for name in needed],
        record_type,
        record_path,
        activity,
        announce,
        build,
    )
    return StandInFiles(
        model,
        work_dir / names.tokenizer_dir,
        work_dir / names.data,
        work_dir / names.nltk_data,
        record,
        record_path,
    )


def sentence_splitter(nltk_data: Path) -> SentenceSplitter:
    """The small Punkt model of accuracy/punkt_tab.py, written to `nltk_data` for the runs too,
    since nltk's English model is no wheel."""
    write_punkt_tab(nltk_data)
    return SentenceSplitter(nltk_data)


def require_rouge1(rouge1: float, stand_in: str, held_out: str) -> None:
    """The `stand_in` build's ROUGE-1 on its held-out samples (`held_out`: what they are) must
    reach REQUIRED_ROUGE1."""
    if rouge1 < REQUIRED_ROUGE1:
        raise HarnessError(
            f"the {stand_in} stand-in reached only ROUGE-1 {rouge1:.2f} on held-out {held_out} "
            f"(needs {REQUIRED_ROUGE1}); report this as a bug"
        )


def stand_in_main(
    argv: Sequence[str] | None, what: str, ensure: Callable[[Path], StandInFiles[R]]
) -> int:
    """`pants run benchmarks/<name>:stand_in` of a ROUGE stand-in: its record, then where its
    model, tokenizer and data are (benchmarks/stand_in_cli.py)."""

    def report(_args: argparse.Namespace, built: StandInFiles[R]) -> None:
        print(f"model {built.model}\ntokenizer {built.tokenizer_dir}\ndata {built.data}")

    return run_stand_in(stand_in_parser(what), argv, ensure, report, None)
