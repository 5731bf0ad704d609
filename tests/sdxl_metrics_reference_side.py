"""The reference's half of sdxl_metrics_reference.py, run in a process of its own with MLCommons'
`text_to_image/tools` (taken from the mirror at the round's commit, not copied here) first on the
import path, and the reference's pinned packages (open_clip_torch 2.26.1, SciPy 1.10.1, pandas,
ijson) where given: `python sdxl_metrics_reference_side.py WORK`.

In WORK it finds what the orchestrator wrote (the accuracy log of 1024x1024 images, captions.tsv,
small.npy: smaller images scored without a log, stats_images.npy: the images of the FID
statistics) and writes:

1. seeded random weights in the official files' layouts, from the reference's own modules:
   `metrics/pt_inception-2015-12-05-6726825d.pth` (pytorch-fid's FID Inception: torchvision's
   Inception3, 1,008 classes, no aux logits, the reference's FID blocks; strictly loaded back by
   the reference's own `fid_inception_v3`, so a layout of ours that differed would fail here) and
   `metrics/open_clip_pytorch_model.bin` (open_clip's ViT-B-32 with QuickGELU). Every tensor is
   random, LayerNorm and BatchNorm parameters and running statistics too (ones and zeros would
   hide a swapped or dropped affine), and the CLIP weights are rounded to float16 first: OpenAI's
   checkpoint is float16, and open_clip 2.26.1's "openai" loader rounds to it anyway;
2. `stats.npz`: mu and sigma of the statistics images' activations, by the reference's
   `calculate_activation_statistics`, saved as its `save_fid_stats` saves them;
3. `reference-results.json`: `accuracy_coco.compute_accuracy` on the log (its FID and CLIP lines),
   with CLIPEncoder's default ("ViT-B/32", "openai"): the one substitution is where open_clip
   fetches OpenAI's checkpoint (its download, hashed against the official file, replaced by the
   seeded file), and where pytorch-fid's weights are cached (TORCH_HOME, set by the orchestrator);
4. `reference.npz`: the features the metrics are made of (Inception activations by
   `get_activations`, CLIP's image and text features and tokens as CLIPEncoder computes them),
   the small images' FID (`compute_fid`) and CLIP scores (`get_clip_score`), the token rows of
   every caption in captions.tsv by `open_clip.tokenize` and the captions `ftfy.fix_text` changes.
"""

from __future__ import annotations

import csv
import importlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch  # type: ignore[import-not-found]  # pants: no-infer-dep

INCEPTION_FILE = "pt_inception-2015-12-05-6726825d.pth"
CLIP_FILE = "open_clip_pytorch_model.bin"
OPEN_CLIP_VERSION = "2.26.1"  # text_to_image/requirements.txt's pin: its "openai" loader is used


def _seeded(shape: tuple[int, ...], generator: Any, scale: float, offset: float = 0.0) -> Any:
    return torch.randn(shape, generator=generator) * scale + offset


def fid_inception_architecture(inception: Any) -> Any:
    """The network the reference's `fid_inception_v3` builds, from its own classes, before its
    weights are loaded (that function downloads them; the file is what we are writing)."""
    net = inception._inception_v3(num_classes=1008, aux_logits=False, weights=None)
    net.Mixed_5b = inception.FIDInceptionA(192, pool_features=32)
    net.Mixed_5c = inception.FIDInceptionA(256, pool_features=64)
    net.Mixed_5d = inception.FIDInceptionA(288, pool_features=64)
    net.Mixed_6b = inception.FIDInceptionC(768, channels_7x7=128)
    net.Mixed_6c = inception.FIDInceptionC(768, channels_7x7=160)
    net.Mixed_6d = inception.FIDInceptionC(768, channels_7x7=160)
    net.Mixed_6e = inception.FIDInceptionC(768, channels_7x7=192)
    net.Mixed_7b = inception.FIDInceptionE_1(1280)
    net.Mixed_7c = inception.FIDInceptionE_2(2048)
    return net


def seeded_inception_state(inception: Any, seed: int) -> dict[str, Any]:
    """He-normal convolutions (activations keep their scale through 94 layers) and BatchNorms
    whose scale, shift and running statistics are all drawn."""
    generator = torch.Generator().manual_seed(seed)
    state = fid_inception_architecture(inception).state_dict()
    out = {}
    for name, value in state.items():
        shape = tuple(value.shape)
        if name.endswith("conv.weight"):
            fan_in = shape[1] * shape[2] * shape[3]
            out[name] = _seeded(shape, generator, (2.0 / fan_in) ** 0.5)
        elif name.endswith(("bn.weight", "bn.running_var")):
            out[name] = torch.rand(shape, generator=generator) * 0.5 + 0.75
        elif name.endswith(("bn.bias", "bn.running_mean")):
            out[name] = _seeded(shape, generator, 0.1)
        elif name.startswith("fc."):
            out[name] = _seeded(shape, generator, 0.01)
        else:  # num_batches_tracked
            out[name] = value
    return out


def seeded_clip_state(open_clip: Any, seed: int) -> dict[str, Any]:
    """open_clip's own initialisation of ViT-B-32 (QuickGELU), then every bias and LayerNorm
    parameter it leaves at zero or one drawn, all rounded to float16."""
    torch.manual_seed(seed)
    model = open_clip.create_model("ViT-B-32", pretrained=None, force_quick_gelu=True)
    generator = torch.Generator().manual_seed(seed + 1)
    out = {}
    for name, value in model.state_dict().items():
        value = value.float()
        if name.endswith("bias"):
            value = value + _seeded(tuple(value.shape), generator, 0.02)
        elif ".ln_" in name or name.startswith("ln_") or "ln_final" in name:
            value = value + _seeded(tuple(value.shape), generator, 0.1)
        out[name] = value.half().float()
    return out


def write_weights(work: Path, seed: int) -> Path:
    import open_clip  # type: ignore[import-not-found]  # pants: no-infer-dep

    if open_clip.__version__ != OPEN_CLIP_VERSION:
        sys.exit(
            f"open_clip_torch {open_clip.__version__} is installed; the reference pins "
            f"{OPEN_CLIP_VERSION}, whose 'openai' loader this check drives"
        )
    inception = importlib.import_module("fid.inception")
    metrics = work / "metrics"
    metrics.mkdir(parents=True, exist_ok=True)
    torch.save(seeded_inception_state(inception, seed), metrics / INCEPTION_FILE)
    torch.save(seeded_clip_state(open_clip, seed), metrics / CLIP_FILE)
    # Where load_state_dict_from_url finds FID_WEIGHTS_URL's file without downloading it.
    cache = Path(torch.hub.get_dir()) / "checkpoints"
    cache.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(metrics / INCEPTION_FILE, cache / INCEPTION_FILE)
    # open_clip's tokenizer vocabulary, for our side's tokenizer.
    from open_clip.tokenizer import default_bpe  # type: ignore[import-not-found]  # pants: no-infer-dep

    shutil.copyfile(default_bpe(), work / Path(default_bpe()).name)
    return metrics / CLIP_FILE


def use_clip_file(path: Path) -> None:
    """open_clip 2.26.1's "openai" path downloads OpenAI's ViT-B-32.pt and checks its SHA-256;
    hand it the seeded file instead (its loader then tries torch.jit.load, falls back to
    torch.load of a state dict, and builds the model as for the official file)."""
    import open_clip.openai  # type: ignore[import-not-found]  # pants: no-infer-dep

    open_clip.openai.download_pretrained_from_url = lambda url, cache_dir=None: str(path)


def main(work: Path, seed: int) -> None:
    from PIL import Image

    clip_file = write_weights(work, seed)
    use_clip_file(clip_file)
    accuracy_coco = importlib.import_module("accuracy_coco")
    fid_score = importlib.import_module("fid.fid_score")
    inception = importlib.import_module("fid.inception")
    clip_encoder = importlib.import_module("clip.clip_encoder")
    import open_clip  # pants: no-infer-dep
    import pandas as pd  # type: ignore[import-untyped]  # pants: no-infer-dep

    # 2. The FID statistics, as save_fid_stats makes them from a folder of images.
    model = inception.InceptionV3([inception.InceptionV3.BLOCK_INDEX_BY_DIM[2048]])
    stats_images = [Image.fromarray(a).convert("RGB") for a in np.load(work / "stats_images.npy")]
    mu, sigma = fid_score.calculate_activation_statistics(
        stats_images, model, batch_size=8, dims=2048, device="cpu", num_workers=1
    )
    np.savez_compressed(work / "stats.npz", mu=mu, sigma=sigma)

    # 3. accuracy_coco.py's own computation on the log.
    log = work / "mlperf_log_accuracy.json"
    captions_path = work / "captions.tsv"
    df_captions = pd.read_csv(captions_path, sep="\t")
    accuracy_coco.compute_accuracy(
        str(log),
        str(work / "reference-results.json"),
        "cpu",
        False,
        [],
        None,
        df_captions,
        str(work / "stats.npz"),
    )

    # 4. The features behind those figures, and the small images without a log.
    entries = json.loads(log.read_text())
    log_images = [
        np.frombuffer(bytes.fromhex(e["data"]), np.uint8).reshape(1024, 1024, 3) for e in entries
    ]
    with captions_path.open() as f:
        captions = [row["caption"] for row in csv.DictReader(f, delimiter="\t")]
    log_captions = [captions[e["qsl_idx"]] for e in entries]
    small = list(np.load(work / "small.npy"))
    small_captions = captions[: len(small)]

    def inception_features(images: list[Any]) -> Any:
        pictures = [Image.fromarray(a).convert("RGB") for a in images]
        return fid_score.get_activations(pictures, model, 1, 2048, "cpu", 1)

    clip = clip_encoder.CLIPEncoder(device="cpu")

    @torch.no_grad()  # type: ignore[untyped-decorator]
    def clip_features(images: list[Any], texts: list[str]) -> tuple[Any, Any, Any]:
        pixels = torch.stack([clip.preprocess(Image.fromarray(a)) for a in images])
        tokens = open_clip.tokenize(texts)
        return (
            clip.model.encode_image(pixels).float().numpy(),
            clip.model.encode_text(tokens).float().numpy(),
            tokens.numpy(),
        )

    log_image_f, log_text_f, log_tokens = clip_features(log_images, log_captions)
    small_image_f, small_text_f, small_tokens = clip_features(small, small_captions)
    small_clip = [
        100 * clip.get_clip_score(c, Image.fromarray(a)).item()
        for a, c in zip(small, small_captions, strict=True)
    ]
    small_fid = fid_score.compute_fid(small, str(work / "stats.npz"), "cpu")
    # Every caption of the file (the reference's 5,000) through open_clip.tokenize, whose cleaning
    # starts with ftfy.fix_text (ours has no ftfy), and which of them ftfy changes.
    import ftfy  # type: ignore[import-not-found]  # pants: no-infer-dep

    ftfy_changed = [i for i, c in enumerate(captions) if ftfy.fix_text(c) != c]
    np.savez(
        work / "reference.npz",
        log_inception=inception_features(log_images),
        log_clip_image=log_image_f,
        log_clip_text=log_text_f,
        log_tokens=log_tokens,
        small_inception=inception_features(small),
        small_clip_image=small_image_f,
        small_clip_text=small_text_f,
        small_tokens=small_tokens,
        small_clip_scores=np.array(small_clip),
        small_fid=np.array(small_fid),
        all_tokens=open_clip.tokenize(captions).numpy(),
        ftfy_changed=np.array(ftfy_changed, np.int64),
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
