"""The OpenImages MLPerf subset's layout, as MLCommons' scripts (`openimages_mlperf.sh`) leave it
and `accuracy-openimages.py` reads it:

    <data_dir>/annotations/openimages-mlperf.json   COCO-format annotations of the subset
    <data_dir>/validation/data/<file_name>          the images the annotations name

The annotations' `images` list, in its order, is the benchmark's sample list: LoadGen's sample
index i is `images[i]` (the accuracy script maps a logged index back that way), 24,781 images in
the real subset. Categories are numbered 0..263 and a detection's label is its category id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_harness.errors import HarnessError

ANNOTATIONS_FILE = Path("annotations") / "openimages-mlperf.json"
IMAGES_DIR = Path("validation") / "data"
FULL_IMAGE_COUNT = 24_781
FULL_CATEGORY_COUNT = 264
WHERE_TO_GET = (
    "fetch it with MLCommons' vision/classification_and_detection/tools/openimages_mlperf.sh "
    "(-d <data_dir>), which downloads the subset's images from OpenImages and writes "
    "annotations/openimages-mlperf.json"
)


@dataclass(frozen=True)
class OpenImagesSet:
    """A checked set: its directory, the images in sample order, and the categories."""

    data_dir: Path
    images: list[dict[str, Any]]  # each with id, file_name, height, width
    category_ids: list[int]

    def __len__(self) -> int:
        return len(self.images)

    @property
    def annotations_file(self) -> Path:
        return self.data_dir / ANNOTATIONS_FILE

    @property
    def image_dir(self) -> Path:
        return self.data_dir / IMAGES_DIR

    def image_path(self, index: int) -> Path:
        return self.image_dir / str(self.images[index]["file_name"])

    @property
    def is_full(self) -> bool:
        return (
            len(self.images) == FULL_IMAGE_COUNT and len(self.category_ids) == FULL_CATEGORY_COUNT
        )

    def describe(self) -> str:
        if self.is_full:
            return f"OpenImages MLPerf subset: {len(self)} images in {self.data_dir}"
        return (
            f"partial OpenImages set: {len(self)} images, {len(self.category_ids)} categories in "
            f"{self.data_dir} (not the {FULL_IMAGE_COUNT:,}-image MLPerf subset: no valid MLPerf "
            f"accuracy result)"
        )


def read_annotations(path: Path) -> dict[str, Any]:
    """The annotations file as a dict, or one line saying why it cannot be used."""
    if not path.is_file():
        raise HarnessError(f"annotations file not found: {path}; {WHERE_TO_GET}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise HarnessError(f"cannot read the annotations file {path}: {err}") from err
    if not isinstance(data, dict) or not all(
        isinstance(data.get(key), list) for key in ("images", "annotations", "categories")
    ):
        raise HarnessError(
            f"{path} is not COCO-format annotations (needs lists 'images', 'annotations' and "
            f"'categories')"
        )
    for image in data["images"]:
        if (
            not isinstance(image, dict)
            or not {"id", "file_name", "height", "width"} <= image.keys()
        ):
            raise HarnessError(
                f"{path}: an entry of 'images' lacks id, file_name, height or width: {image!r:.120}"
            )
    return data


def check_layout(data_dir: Path, *, check_images: bool = True) -> OpenImagesSet:
    """The set under data_dir; one line naming what is missing. `check_images`: every image the
    annotations name must exist (their content is checked when they are preprocessed)."""
    data = read_annotations(data_dir / ANNOTATIONS_FILE)
    images: list[dict[str, Any]] = data["images"]
    if not images:
        raise HarnessError(f"{data_dir / ANNOTATIONS_FILE} lists no images")
    found = OpenImagesSet(
        data_dir, images, sorted(int(category["id"]) for category in data["categories"])
    )
    if check_images:
        missing = [
            str(image["file_name"])
            for image in images
            if not (found.image_dir / str(image["file_name"])).is_file()
        ]
        if missing:
            shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
            raise HarnessError(
                f"{len(missing)} of the {len(images)} images that {ANNOTATIONS_FILE} names are not "
                f"in {found.image_dir} ({shown}); {WHERE_TO_GET}"
            )
    return found
