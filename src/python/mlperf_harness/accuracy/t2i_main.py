"""The text-to-image accuracy check alone, with accuracy_coco.py's flags: FID and CLIP score of an
accuracy log, printed and written in the reference's words (`benchmarks/sdxl:accuracy`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from mlperf_harness.accuracy.coco_t2i import (
    iter_log_images,
    read_statistics,
    score_images,
    write_compliance_images,
)
from mlperf_harness.atomic import write_text_atomic
from mlperf_harness.cli.parsing import OneLineParser, run_entry_point
from mlperf_harness.datasets.clip_bpe import ClipTokenizer, read_merges
from mlperf_harness.datasets.coco_t2i import read_captions


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="accuracy", description=__doc__)
    parser.add_argument(
        "--mlperf_accuracy_file", "--mlperf-accuracy-file", type=Path, required=True
    )
    parser.add_argument("--caption_path", "--caption-path", type=Path, required=True)
    parser.add_argument("--statistics_path", "--statistics-path", type=Path, required=True)
    parser.add_argument(
        "--metrics_dir",
        type=Path,
        required=True,
        help="the official metric weights (or a stand-in's metrics/)",
    )
    parser.add_argument("--merges", type=Path, required=True, help="CLIP's BPE merges file")
    parser.add_argument(
        "--stand_in", action="store_true", help="metrics_dir is a stand-in's seeded ONNX extractors"
    )
    parser.add_argument(
        "--output_file", "--output-file", type=Path, default=Path("coco-results.json")
    )
    parser.add_argument("--compliance_images_path", "--compliance-images-path", type=Path)
    parser.add_argument(
        "--ids", type=str, default="", help="comma-separated ids of compliance images"
    )

    def run() -> int:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        captions = [c.caption for c in read_captions(args.caption_path)]
        tokenizer = ClipTokenizer(read_merges(args.merges))
        if args.stand_in:
            from mlperf_harness.benchmarks.sdxl.stand_in import stand_in_extractors

            extractors = stand_in_extractors(args.metrics_dir, tokenizer)
        else:
            from mlperf_harness.accuracy.t2i_weights import official_extractors

            extractors = official_extractors(args.metrics_dir, tokenizer)
        indexed = list(iter_log_images(args.mlperf_accuracy_file))
        accuracy = score_images(
            indexed, captions, read_statistics(args.statistics_path), extractors
        )
        if args.compliance_images_path is not None:
            ids = [int(i) for i in args.ids.split(",") if i.strip()]
            write_compliance_images(args.compliance_images_path, indexed, ids, captions)
        print(accuracy.line())
        result = {"FID_SCORE": f"{accuracy.fid}", "CLIP_SCORE": f"{accuracy.clip}"}
        write_text_atomic(args.output_file, json.dumps(result, sort_keys=True, indent=4))
        return 0

    return run_entry_point("accuracy", run)


if __name__ == "__main__":
    sys.exit(main())
