"""The stand-in's ONNX pipeline: SDXL's four networks at reduced size, the 20-step loop with
guidance batched, uint8 images as the reference rounds them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mlperf_harness.atomic import write_bytes_atomic
from mlperf_harness.benchmarks.sdxl import stand_in_model as parts
from mlperf_harness.benchmarks.sdxl.pipeline import (
    MODEL_FILES,
    OnnxPipeline,
    PipelineInputs,
    PipelineRunner,
    pack_rows,
    to_uint8_images,
)
from mlperf_harness.datasets.clip_bpe import ClipTokenizer, train_merges
from mlperf_harness.datasets.coco_t2i import token_rows
from mlperf_harness.errors import HarnessError

CAPTIONS = ["A red circle above a blue square.", "A green stripe left of a white triangle."]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ClipTokenizer, parts.SdxlShape]:
    directory = tmp_path_factory.mktemp("sdxl")
    tokenizer = ClipTokenizer(train_merges(CAPTIONS, 40))
    shape = parts.stand_in_shape(tokenizer.vocab_size)
    graphs = (
        parts.text_encoder_model(
            parts.text_weights(shape.text1, 0, 1), shape.text1, tokenizer.end_id
        ),
        parts.text_encoder_model(
            parts.text_weights(shape.text2, 0, 2), shape.text2, tokenizer.end_id
        ),
        parts.unet_model(parts.unet_weights(shape.unet, 0), shape.unet),
        parts.vae_decoder_model(parts.vae_decoder_weights(shape.vae, 0), shape.vae),
    )
    for name, graph in zip(MODEL_FILES, graphs, strict=True):
        write_bytes_atomic(directory / name, graph.SerializeToString())
    return directory, tokenizer, shape


def _pipeline(built: tuple[Path, ClipTokenizer, parts.SdxlShape]) -> OnnxPipeline:
    directory, tokenizer, shape = built
    latents = np.random.default_rng(0).standard_normal(
        (1, 4, shape.latent_size, shape.latent_size), dtype=np.float32
    )
    negative = token_rows(["blurry"], tokenizer, tokenizer)[0]
    pipeline = OnnxPipeline(directory, PipelineInputs(latents, negative), intra_op_threads=1)
    pipeline.load()
    return pipeline


def test_a_batch_gives_each_samples_own_image(
    built: tuple[Path, ClipTokenizer, parts.SdxlShape],
) -> None:
    _, tokenizer, shape = built
    pipeline = _pipeline(built)
    rows = token_rows(CAPTIONS, tokenizer, tokenizer)
    together = pipeline.generate(rows)
    assert (
        together.shape == (2, shape.image_size, shape.image_size, 3) and together.dtype == np.uint8
    )
    alone = np.concatenate([pipeline.generate(rows[i : i + 1]) for i in range(2)])
    # Batched and single calls differ only by float rounding in ONNX Runtime's kernels.
    assert np.abs(together.astype(int) - alone.astype(int)).max() <= 1
    assert not np.array_equal(together[0], together[1])  # the caption decides the image
    assert len(np.unique(together)) > 16  # an image, not a constant


def test_the_runner_answers_packed_rows_with_image_bytes(
    built: tuple[Path, ClipTokenizer, parts.SdxlShape],
) -> None:
    _, tokenizer, shape = built
    pipeline = _pipeline(built)
    runner = PipelineRunner(pipeline)
    runner.activate()
    rows = token_rows(CAPTIONS[:1], tokenizer, tokenizer)
    out = runner.infer(pack_rows(rows))
    assert out.shape == (1, shape.image_size * shape.image_size * 3)
    assert np.array_equal(
        out.reshape(1, shape.image_size, shape.image_size, 3), pipeline.generate(rows)
    )


def test_images_are_rounded_as_the_reference_rounds_them() -> None:
    decoded = np.array([-1.5, -1.0, 0.0, 0.001, 1.0, 2.0], np.float32).reshape(1, 3, 1, 2)
    image = to_uint8_images(decoded)
    # (x / 2 + 0.5) clamped, HWC, x 255, rounded half to even as torch's round().
    assert image.shape == (1, 1, 2, 3)
    assert image.reshape(-1).tolist() == [0, 128, 255, 0, 128, 255]


def test_a_directory_without_the_four_graphs_is_one_line(tmp_path: Path) -> None:
    latents = np.zeros((1, 4, 8, 8), np.float32)
    with pytest.raises(HarnessError) as caught:
        OnnxPipeline(tmp_path, PipelineInputs(latents, np.zeros((2, 77), np.int64)))
    assert "\n" not in str(caught.value) and "unet.onnx" in str(caught.value)
