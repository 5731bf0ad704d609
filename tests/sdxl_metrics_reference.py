"""Our FID and CLIP score (accuracy/coco_t2i.py: ONNX graphs on ONNX Runtime, the weight files read
without torch) against MLCommons' `accuracy_coco.py` itself (torch, torchvision, open_clip), on the
same images, captions, statistics and feature-extractor weights: seeded random weights of the two
official architectures, written by the reference's own modules in the official files' layouts.

A developer tool, not part of CI (which has no torch):

    PYTHONPATH=src/python:tests python tests/sdxl_metrics_reference.py [--work DIR] \
        [--reference_site DIR]

with torch, torchvision, open_clip_torch 2.26.1 (the reference's pin) and SciPy importable;
`--reference_site` puts the reference's other pins (SciPy 1.10.1, pandas, ijson) first on the
reference process's path only, so that our side runs with our own pins (SciPy 1.17.1).
`tests/mlperf_harness/accuracy/test_t2i_metrics_against_reference.py` runs it where torch is.

The reference's code comes from the mirror of mlcommons/inference (`git archive` at the commit our
v6.1 tables were read at) into WORK, not into this repository. What is compared:
- the accuracy log (1024x1024 images, the size accuracy_coco.py reshapes to; real COCO captions
  from the reference's captions_source.tsv, answered out of order): the reference's
  `compute_accuracy` against our `score_accuracy_log`: FID and CLIP score;
- smaller images without a log (64x64, the stand-in's size, upscaled by both resizes): the
  reference's `compute_fid` and `get_clip_score` against our `score_images`;
- the features behind them (Inception pool features, CLIP image and text features) and CLIP's
  token rows, and the Frechet distance of the reference's own features by our code;
- every caption of the reference's captions_source.tsv: our CLIP token rows against
  open_clip.tokenize's (which repairs text with ftfy first; ours has no ftfy), and how many
  captions ftfy changes.
Exits non-zero when a figure is outside its tolerance (TOLERANCES: why each is what it is).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

from mlperf_harness.accuracy.coco_t2i import (
    Extractors,
    frechet_distance,
    read_statistics,
    score_accuracy_log,
    score_images,
    statistics,
)
from mlperf_harness.accuracy.t2i_features import FEATURES, PIXELS
from mlperf_harness.accuracy.t2i_weights import official_extractors
from mlperf_harness.benchmarks.sdxl.stand_in_model import INPUT_IDS, POOLED
from mlperf_harness.datasets.clip_bpe import ClipTokenizer, read_merges
from mlperf_harness.datasets.coco_t2i import read_captions
from mlperf_harness.submission.rounds.facts import CURRENT_CHECKER_COMMIT

MIRROR = Path("/work/.mirror/mlcommons+inference/repo")
TOOLS = "text_to_image/tools"
CAPTIONS = "text_to_image/coco2014/captions/captions_source.tsv"
REFERENCE_FILES = (
    f"{TOOLS}/accuracy_coco.py",
    f"{TOOLS}/fid/fid_score.py",
    f"{TOOLS}/fid/inception.py",
    f"{TOOLS}/clip/clip_encoder.py",
    CAPTIONS,
)
SIDE = Path(__file__).with_name("sdxl_metrics_reference_side.py")
LOG_SIDE, SMALL_SIDE = 1024, 64


@dataclass(frozen=True)
class Tolerance:
    limit: float
    why: str


# Float32 on both sides, different kernels (oneDNN/MKL convolutions and GEMMs against ONNX Runtime's
# MLAS, BatchNorm folded into the convolutions on ours), so features agree to float32 rounding
# accumulated over the network, not bit for bit; each bound follows from the one before it.
TOLERANCES = {
    # Features of order 1 (the largest 3-4) after sums of 10^3-10^4 products a layer, 94 layers
    # (Inception) or 12 a tower (CLIP): 1e-5 of the largest is ~170 float32 ulps, room for other
    # summation orders (other CPUs' vector widths) at that depth.
    "Inception features (relative to max)": Tolerance(1e-5, "float32 rounding through 94 layers"),
    "CLIP features (relative to max)": Tolerance(1e-5, "float32 rounding through 12 layers"),
    # CLIP score: 100 x a cosine of unit vectors, which features within a relative 1e-5 move by at
    # most ~1e-5 each.
    "CLIP score (absolute)": Tolerance(1e-3, "100 x a cosine of features within 1e-5"),
    # FID from the same float64 features: our frechet_distance (SciPy 1.17's sqrtm) against the
    # reference's (its pinned SciPy 1.10's): the same Schur-based arithmetic.
    "FID, same features (relative)": Tolerance(1e-6, "the same float64 arithmetic"),
    # FID end to end: ||mu1 - mu2||^2 + Tr S1 + Tr S2 - 2 Tr sqrtm(S1 S2), first order in the
    # features' error, but with fewer images than features both covariances are singular and
    # sqrtm's near-zero eigenvalues amplify it (sqrt has unbounded slope at 0): a relative 1e-3.
    "FID end to end (relative)": Tolerance(1e-3, "feature rounding through a singular sqrtm"),
}


def reference_tools(repo: Path, commit: str, work: Path) -> Path:
    """The reference's accuracy code and captions at `commit`, written under work/reference (never
    into this repository): file by file, the mirror lacking some of the folder's large files."""
    target = work / "reference"
    for name in REFERENCE_FILES:
        blob = subprocess.run(
            ["git", "--git-dir", str(repo), "show", f"{commit}:{name}"],
            check=True,
            capture_output=True,
        ).stdout
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(blob)
    return target / TOOLS


def generated_images(count: int, side: int, seed: int) -> npt.NDArray[np.uint8]:
    """Pictures with structure at every scale (a few bicubic-smoothed random colour fields, a
    rectangle, noise): not flat grey after a resize, different from each other."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, side, count]))
    out = np.empty((count, side, side, 3), np.uint8)
    for i in range(count):
        coarse = rng.integers(0, 256, (int(rng.integers(2, 12)),) * 2 + (3,), dtype=np.uint8)
        field = np.asarray(
            Image.fromarray(coarse).resize((side, side), Image.Resampling.BICUBIC), np.float32
        )
        y0, x0 = rng.integers(0, side // 2, 2)
        h, w = rng.integers(side // 8, side // 2, 2)
        field[y0 : y0 + h, x0 : x0 + w] = rng.integers(0, 256, 3)
        field += rng.normal(0, 12, field.shape).astype(np.float32)
        out[i] = np.clip(np.rint(field), 0, 255).astype(np.uint8)
    return out


def write_log(path: Path, images: npt.NDArray[np.uint8], order: Sequence[int]) -> None:
    """LoadGen's accuracy log: one entry per response, its bytes in upper-case hex."""
    entries = [
        {"seq_id": seq, "qsl_idx": int(idx), "data": images[idx].tobytes().hex().upper()}
        for seq, idx in enumerate(order)
    ]
    path.write_text(json.dumps(entries))


def prepare(work: Path, repo: Path, commit: str, images: int, small: int, seed: int) -> Path:
    tools = reference_tools(repo, commit, work)
    (work / "captions.tsv").write_bytes((work / "reference" / CAPTIONS).read_bytes())
    log_images = generated_images(images, LOG_SIDE, seed)
    order = np.random.default_rng(seed).permutation(images)
    write_log(work / "mlperf_log_accuracy.json", log_images, order.tolist())
    np.save(work / "small.npy", generated_images(small, SMALL_SIDE, seed))
    np.save(work / "stats_images.npy", generated_images(2 * images, 256, seed + 1))
    return tools


def run_reference(work: Path, tools: Path, site: Path | None, seed: int) -> float:
    path = [str(tools), *([str(site)] if site else []), *sys.path]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path),
        "TORCH_HOME": str(work / "torch_home"),
    }
    start = time.monotonic()
    subprocess.run([sys.executable, str(SIDE), str(work), str(seed)], env=env, check=True)
    return time.monotonic() - start


@dataclass
class Row:
    name: str
    ours: float
    reference: float
    difference: float
    tolerance: str

    def line(self) -> str:
        ok = self.difference <= TOLERANCES[self.tolerance].limit
        return (
            f"{self.name:<42} {self.ours:>22.12g} {self.reference:>22.12g} "
            f"{self.difference:>10.3g} {'ok' if ok else 'DIFFER'} ({self.tolerance} <= "
            f"{TOLERANCES[self.tolerance].limit:g})"
        )

    @property
    def ok(self) -> bool:
        return self.difference <= TOLERANCES[self.tolerance].limit


def relative_max(
    ours: npt.NDArray[np.floating[Any]], reference: npt.NDArray[np.floating[Any]]
) -> float:
    return float(np.max(np.abs(ours - reference)) / np.max(np.abs(reference)))


def clip_features(
    extractors: Extractors, images: Sequence[npt.NDArray[np.uint8]], texts: Sequence[str]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    from mlperf_harness.accuracy.coco_t2i import clip_pixels

    pixels = np.stack([clip_pixels(image, extractors.clip_size) for image in images])
    tokens = np.stack([extractors.tokenizer.row(t, pad_id=0) for t in texts])
    (image_features,) = extractors.clip_image.run([FEATURES], {PIXELS: pixels})
    (text_features,) = extractors.clip_text.run([POOLED], {INPUT_IDS: tokens})
    return image_features, text_features, tokens


def compare(work: Path) -> list[Row]:
    captions = [c.caption for c in read_captions(work / "captions.tsv")]
    tokenizer = ClipTokenizer(read_merges(work / "bpe_simple_vocab_16e6.txt.gz"))
    extractors = official_extractors(work / "metrics", tokenizer)
    stats = read_statistics(work / "stats.npz")
    ref = np.load(work / "reference.npz")
    ref_result = json.loads((work / "reference-results.json").read_text())
    rows: list[Row] = []

    def row(name: str, ours: float, reference: float, kind: str, relative: bool = True) -> None:
        diff = abs(ours - reference) / (abs(reference) if relative else 1.0)
        rows.append(Row(name, ours, reference, diff, kind))

    def features(name: str, ours: npt.NDArray[np.floating[Any]], key: str, kind: str) -> None:
        rows.append(
            Row(
                f"{name} max |diff|",
                float(np.max(np.abs(ours - ref[key]))),
                float(np.max(np.abs(ref[key]))),
                relative_max(ours, ref[key]),
                kind,
            )
        )

    entries = json.loads((work / "mlperf_log_accuracy.json").read_text())
    log = score_accuracy_log(work / "mlperf_log_accuracy.json", captions, stats, extractors)
    row("log: FID", log.fid, float(ref_result["FID_SCORE"]), "FID end to end (relative)")
    row(
        "log: CLIP score",
        log.clip,
        float(ref_result["CLIP_SCORE"]),
        "CLIP score (absolute)",
        relative=False,
    )
    log_images = [
        np.frombuffer(bytes.fromhex(e["data"]), np.uint8).reshape(LOG_SIDE, LOG_SIDE, 3)
        for e in entries
    ]
    log_captions = [captions[e["qsl_idx"]] for e in entries]
    small = list(np.load(work / "small.npy"))
    small_captions = captions[: len(small)]
    for part, images, texts in (
        ("log", log_images, log_captions),
        ("small", small, small_captions),
    ):
        inception = extractors.inception_features(images)
        features(f"{part}: Inception features", inception, f"{part}_inception",
                 "Inception features (relative to max)")  # fmt: skip
        image_f, text_f, tokens = clip_features(extractors, images, texts)
        features(f"{part}: CLIP image features", image_f, f"{part}_clip_image",
                 "CLIP features (relative to max)")  # fmt: skip
        features(f"{part}: CLIP text features", text_f, f"{part}_clip_text",
                 "CLIP features (relative to max)")  # fmt: skip
        if not np.array_equal(tokens, ref[f"{part}_tokens"]):
            raise SystemExit(f"{part}: our CLIP token rows differ from open_clip.tokenize's")
        # The reference's own features through our Frechet distance (isolates the arithmetic).
        mu, sigma = statistics(np.asarray(ref[f"{part}_inception"], np.float64))
        ours_on_ref = frechet_distance(stats[0], stats[1], mu, sigma)
        reference_fid = float(ref_result["FID_SCORE"]) if part == "log" else float(ref["small_fid"])
        row(f"{part}: FID of the reference's features", ours_on_ref, reference_fid,
            "FID, same features (relative)")  # fmt: skip
    # Every caption of the reference's file: our token rows against open_clip.tokenize's (which
    # repairs text with ftfy first; we do not).
    ours_tokens = np.stack([tokenizer.row(c, pad_id=0) for c in captions])
    differing = np.flatnonzero((ours_tokens != ref["all_tokens"]).any(axis=1))
    print(
        f"token rows of all {len(captions)} captions: {len(differing)} differ from "
        f"open_clip.tokenize's; ftfy.fix_text changes {len(ref['ftfy_changed'])} captions"
    )
    if len(differing):
        raise SystemExit(f"captions tokenized differently: {differing[:10].tolist()}")
    accuracy = score_images(list(enumerate(small)), captions, stats, extractors)
    row("small: FID", accuracy.fid, float(ref["small_fid"]), "FID end to end (relative)")
    row(
        "small: CLIP score",
        accuracy.clip,
        float(np.mean(ref["small_clip_scores"])),
        "CLIP score (absolute)",
        relative=False,
    )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="kept; a temporary directory by default")
    parser.add_argument("--inference_repo", type=Path, default=MIRROR, help="a git directory")
    parser.add_argument("--commit", default=CURRENT_CHECKER_COMMIT)
    parser.add_argument("--reference_site", type=Path, help="the reference's pinned packages")
    parser.add_argument("--images", type=int, default=16, help="1024x1024 images in the log")
    parser.add_argument("--small", type=int, default=16, help="64x64 images scored directly")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sdxl-metrics-") as temporary:
        work = args.work or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        tools = prepare(work, args.inference_repo, args.commit, args.images, args.small, args.seed)
        seconds = run_reference(work, tools, args.reference_site, args.seed)
        start = time.monotonic()
        rows = compare(work)
        ours_seconds = time.monotonic() - start
    print(f"\nreference {args.commit[:8]} (torch) {seconds:.0f} s, ours (ONNX Runtime) "
          f"{ours_seconds:.0f} s; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'':<42} {'ours':>22} {'reference':>22} {'diff':>10}")
    for r in rows:
        print(r.line())
    bad = [r.name for r in rows if not r.ok]
    print("AGREE" if not bad else f"DIFFER: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
