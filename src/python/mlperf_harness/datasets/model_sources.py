"""Where the official MLPerf model files are published, and the checksums to verify them against.

Only checksums found in a published source are recorded; where none was found the field is None and
the download is not verified. Zenodo and MLCommons publish md5 sums for these files, not sha256.
"""

from __future__ import annotations

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
