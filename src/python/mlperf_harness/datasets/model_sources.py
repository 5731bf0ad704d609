"""Where the official MLPerf model files (and BERT's SQuAD file) are published, and the checksums
to verify them against.

Only checksums found in a published source are recorded; where none was found the field is None and
the download is not verified. Zenodo and MLCommons publish md5 sums for these files, not sha256.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.datasets.download import download


@dataclass(frozen=True)
class ModelSource:
    description: str
    filename: str
    url: str
    md5: str | None
    sha256: str | None
    checksum_source: str  # where the checksum was published, so that it can be re-checked

    def fetch(self, dest_dir: Path, *, progress: bool = True) -> Path:
        """Download into dest_dir (resuming, verified) unless already there; return the path."""
        return download(
            self.url,
            dest_dir / self.filename,
            self.sha256,
            self.description,
            md5=None if self.sha256 else self.md5,
            progress=progress,
        )


# The model NVIDIA's ResNet-50 code downloads (code/resnet50/tensorrt/download_model.sh) and the
# MLCommons inference README lists for vision/classification_and_detection: ONNX opset 8.
RESNET50_V1_5_ONNX = ModelSource(
    description="MLPerf ResNet-50 v1.5 ONNX model (opset 8)",
    filename="resnet50_v1.onnx",
    url="https://zenodo.org/record/2592612/files/resnet50_v1.onnx",
    md5="a638cf028b5870da29e09ccc2f7182e7",
    sha256=None,
    checksum_source=(
        "MLCommons mlperf-automations script/get-ml-model-resnet50/meta.yaml, variation "
        "onnx,opset-8, MLC_DOWNLOAD_CHECKSUM (the same md5 in cm4mlops' _cm.yaml)"
    ),
)


# BERT-Large on SQuAD v1.1. The URLs are those of MLCommons' inference README (language/bert: Zenodo
# records 3733910 and 3750364) and its automation; the md5 sums are the MLC_DOWNLOAD_CHECKSUM values
# of MLCommons mlperf-automations (the same in cm4mlops), as each checksum_source says.
BERT_LARGE_FP32_ONNX = ModelSource(
    description="MLPerf BERT-Large SQuAD v1.1 ONNX model (fp32)",
    filename="model.onnx",
    url="https://zenodo.org/record/3733910/files/model.onnx",
    md5="819b25b19cd8e59080c10892689750ca",
    sha256=None,
    checksum_source=(
        "MLCommons mlperf-automations script/get-ml-model-bert-large-squad/meta.yaml, variation "
        "onnx,fp32, MLC_DOWNLOAD_CHECKSUM (the same md5 in cm4mlops' _cm.yaml)"
    ),
)

# The quantization-aware fine-tuned model with QDQ (fake-quant) nodes: inputs input_ids,
# attention_mask, token_type_ids (resources.INT8_INPUT_NAMES). NVIDIA's code/bert download_model.sh
# fetches it from the same Zenodo record.
BERT_LARGE_INT8_ONNX = ModelSource(
    description="MLPerf BERT-Large SQuAD v1.1 int8 ONNX model (fake-quantized)",
    filename="bert_large_v1_1_fake_quant.onnx",
    url="https://zenodo.org/record/3750364/files/bert_large_v1_1_fake_quant.onnx",
    md5="45f88ffb2915362242703c85c38ec2d4",
    sha256=None,
    checksum_source=(
        "MLCommons mlperf-automations script/get-ml-model-bert-large-squad/meta.yaml, variation "
        "onnx,int8, MLC_DOWNLOAD_CHECKSUM (the same md5 in cm4mlops' _cm.yaml)"
    ),
)

# The vocabulary of the TensorFlow checkpoint the ONNX models were converted from (uncased
# WordPiece, 30,522 tokens); both models read it.
BERT_VOCAB = ModelSource(
    description="MLPerf BERT-Large vocabulary (vocab.txt)",
    filename="vocab.txt",
    url="https://zenodo.org/record/3733868/files/vocab.txt",
    md5="64800d5d8528ce344256daf115d4965e",
    sha256=None,
    checksum_source=(
        "MLCommons cm4mlops script/get-bert-squad-vocab/_cm.json, CM_DOWNLOAD_CHECKSUM for this URL "
        "(the same md5 for this URL in mlperf-automations' get-ml-model-bert-large-squad, variation "
        "packed)"
    ),
)

# SQuAD v1.1's dev set from the SQuAD explorer's repository: 10,570 questions, the set BERT's
# accuracy is defined on. MLCommons' automation fetches this URL (NVIDIA's download_data.sh the
# github.com/.../raw/master/... address of the same file).
SQUAD_V1_1_DEV = ModelSource(
    description="SQuAD v1.1 dev set (dev-v1.1.json)",
    filename="dev-v1.1.json",
    url="https://raw.githubusercontent.com/rajpurkar/SQuAD-explorer/master/dataset/dev-v1.1.json",
    md5="3e85deb501d4e538b6bc56f786231552",
    sha256=None,
    checksum_source=(
        "MLCommons mlperf-automations script/get-dataset-squad/meta.yaml, version 1.1, "
        "MLC_DOWNLOAD_CHECKSUM (the same md5 in pytorch/text torchtext/datasets/squad1.py, "
        "MD5['dev'])"
    ),
)

# The model NVIDIA's 3D-UNet code downloads (code/3d-unet/tensorrt/download_model.sh, saved as
# 3dUNetKiTS19.onnx) and MLCommons' vision/medical_imaging/3d-unet-kits19 Makefile lists
# (ZENODO_ONNX_DYNBS): the KiTS19 U-Net converted from PyTorch, dynamic batch. No checksum for it
# was found in a published source: the download is not verified.
UNET3D_KITS19_ONNX = ModelSource(
    description="MLPerf 3D-UNet KiTS19 ONNX model (128x128x128 windows, dynamic batch)",
    filename="3dUNetKiTS19.onnx",
    url="https://zenodo.org/record/5597155/files/3dunet_kits19_128x128x128_dynbatch.onnx",
    md5=None,
    sha256=None,
    checksum_source="none published (Zenodo record 5597155 lists no checksum for this file)",
)


# RetinaNet ResNeXt50-32x4d FPN, 800x800, as MLCommons' vision/classification_and_detection README
# lists it (converted from the MLPerf Training checkpoint; its ONNX carries the postprocessing).
RETINANET_ONNX = ModelSource(
    description="MLPerf RetinaNet ResNeXt50-32x4d FPN ONNX model (800x800)",
    filename="resnext50_32x4d_fpn.onnx",
    url="https://zenodo.org/record/6617879/files/resnext50_32x4d_fpn.onnx",
    md5=None,
    sha256=None,
    checksum_source="none found (MLCommons' README links the file without a checksum)",
)


# RNN-T: the PyTorch checkpoint MLCommons' retired_benchmarks/speech_recognition/rnnt/run.sh fetches
# (Zenodo record 3662521; a dict whose 'state_dict' holds the model, benchmarks/rnnt/topology.py).
RNNT_CHECKPOINT = ModelSource(
    description="MLPerf RNN-T PyTorch checkpoint (LibriSpeech, epoch 100)",
    filename="rnnt.pt",
    url=(
        "https://zenodo.org/record/3662521/files/"
        "DistributedDataParallel_1576581068.9962234-epoch-100.pt"
    ),
    md5=None,
    sha256=None,
    checksum_source="none found (MLCommons' run.sh and README fetch it without a checksum)",
)

# GPT-J 6B fine-tuned on CNN-DailyMail: MLCommons' checkpoint, a Hugging Face directory of 13 files
# (three pytorch_model-*.bin shards with their index, config, the GPT-2 tokenizer's files). MLCommons'
# language/gpt-j README fetches it with its R2 downloader from the metadata address
# https://inference.mlcommons-storage.org/metadata/gpt-j-model-checkpoint.uri, which names the
# directory below; beside it, gpt-j-model-checkpoint.md5 lists each file's md5. The same two files
# are published in MLCommons' r2-infra repository (inference/metadata/, commit 613700b of
# 2025-10-08): the md5 sums here are copied from there. The bucket is MLCommons' public one
# (mlcommons-inference-wg-public); files are fetched over plain HTTPS, one by one.
GPTJ_CHECKPOINT_URL = "https://inference.mlcommons-storage.org/gpt-j/checkpoint-final"
GPTJ_CHECKPOINT_MD5_SOURCE = (
    "MLCommons r2-infra inference/metadata/gpt-j-model-checkpoint.md5 (commit 613700b), the list "
    "MLCommons' R2 downloader verifies the checkpoint with"
)
# In download order: the small files first (a wrong mirror or no network shows at once), the
# tokenizer and config that the run reads, then the shards.
GPTJ_CHECKPOINT_MD5 = {
    "config.json": "82b1b65105da74c01fa4ea537a452979",
    "vocab.json": "bfe120ed87c2489c38daf0ebcf0bd64b",
    "merges.txt": "75a37753dd7a28a2c5df80c28bf06e4e",
    "added_tokens.json": "ca7e2d07705a39856dbcca4244508bcf",
    "special_tokens_map.json": "6d363e9825a4feb89a3c32dfe036d722",
    "tokenizer_config.json": "04b97791420d35946866969497319147",
    "generation_config.json": "6bc47803cbe40672a5884df92090e3b6",
    "trainer_state.json": "f3d3fb5c2ab359e46c76723b66bc62df",
    "README.md": "03063eb354bd7d3cc1e2846a9d2fb87f",
    "pytorch_model.bin.index.json": "d7a2ecdb707c22e253c56248bd04c112",
    "pytorch_model-00001-of-00003.bin": "ea3dbd2d8810c1132b3e29df6cbdf4e0",
    "pytorch_model-00002-of-00003.bin": "55ca89d791b65fe2c6769d6f0ddca783",
    "pytorch_model-00003-of-00003.bin": "43dec250d3b8bf2447ce627e5d6a5339",
}


def gptj_checkpoint_sources(
    base_url: str = GPTJ_CHECKPOINT_URL, md5s: Mapping[str, str] = GPTJ_CHECKPOINT_MD5
) -> tuple[ModelSource, ...]:
    """Each file of MLCommons' GPT-J checkpoint at base_url (the published directory, or a mirror
    of it), with its published md5 (tests pass the files and md5s of what they serve)."""
    base = base_url.rstrip("/")
    return tuple(
        ModelSource(
            description=f"MLPerf GPT-J checkpoint file {name}",
            filename=name,
            url=f"{base}/{name}",
            md5=md5,
            sha256=None,
            checksum_source=GPTJ_CHECKPOINT_MD5_SOURCE,
        )
        for name, md5 in md5s.items()
    )


# nltk's Punkt sentence models in the punkt_tab format (nltk 3.9+), the package nltk.download
# ('punkt_tab') fetches: a zip of punkt_tab/<language>/... from the gh-pages branch of nltk's
# nltk_data repository (the address its index.xml gives). Not verified: the copies of index.xml
# that could be read here predate punkt_tab, so no checksum from nltk was found, and the zip on
# that branch has been replaced over time.
PUNKT_TAB_ZIP = ModelSource(
    description="nltk's punkt_tab sentence models (punkt_tab.zip)",
    filename="punkt_tab.zip",
    url="https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/tokenizers/punkt_tab.zip",
    md5=None,
    sha256=None,
    checksum_source="none found (nltk_data's index.xml, which carries its md5s, was not readable here)",
)
