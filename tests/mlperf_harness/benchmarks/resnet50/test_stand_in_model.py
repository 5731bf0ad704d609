"""The stand-in ResNet-50: architecture and interface, a real default build measured end to end through
the CLI, and bit-identical rebuilds. Everything runs for real in ONNX Runtime; nothing is mocked."""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]
import pytest

from mlperf_harness.benchmarks.resnet50 import stand_in_model as stand_in
from mlperf_harness.benchmarks.resnet50.build_stand_in import main
from mlperf_harness.datasets.imagenet import synthetic
from mlperf_harness.datasets.imagenet.layout import parse_val_map
from mlperf_harness.datasets.imagenet.transform import preprocess_file
from mlperf_harness.errors import HarnessError

# Parameters of torchvision's resnet50 (25,557,032) less its 1000-way fc layer and its batch norms'
# 53,120 affine parameters: what the convolutions alone must hold.
RESNET50_CONV_WEIGHTS = 25_557_032 - (2048 * 1000 + 1000) - 53_120


def _session(model: onnx.ModelProto | Path) -> ort.InferenceSession:
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def untrained_model() -> onnx.ModelProto:
    """The classifier graph with identity batch norms and a zero head: the architecture only."""
    convs = stand_in.all_convs()
    statistics = {
        conv.name: stand_in.BnStatistics(np.zeros(conv.out_channels), np.ones(conv.out_channels))
        for conv in convs
    }
    head_weight = np.zeros((stand_in.NUM_OUTPUTS, stand_in.FEATURE_WIDTH), dtype=np.float32)
    head_bias = np.zeros(stand_in.NUM_OUTPUTS, dtype=np.float32)
    weights = stand_in.random_conv_weights(seed=0)
    return stand_in.classifier_graph(weights, statistics, head_weight, head_bias, seed=0)


def test_resnet50_v1_5_architecture(untrained_model: onnx.ModelProto) -> None:
    convs = stand_in.all_convs()
    assert len(convs) == 53  # stem + 16 bottlenecks x 3 + 4 projections
    assert [len([c for c in convs if c.name.startswith(f"stage{s}/")]) for s in range(1, 5)] == [
        3 * 3 + 1,
        4 * 3 + 1,
        6 * 3 + 1,
        3 * 3 + 1,
    ]
    assert sum(int(np.prod(c.weight_shape)) for c in convs) == RESNET50_CONV_WEIGHTS
    # v1.5: the stride of a downsampling bottleneck is on its 3x3 convolution, not the first 1x1.
    for block in stand_in.BOTTLENECKS:
        assert block.conv1.stride == 1 and block.conv3.stride == 1
        assert block.shortcut is None or block.shortcut.stride == block.conv2.stride
    strided = [b.conv2.name for b in stand_in.BOTTLENECKS if b.conv2.stride == 2]
    assert strided == ["stage2/block1/conv2", "stage3/block1/conv2", "stage4/block1/conv2"]
    assert {b.conv3.bn_scale for b in stand_in.BOTTLENECKS} == {stand_in.RESIDUAL_BN_SCALE}
    ops = [node.op_type for node in untrained_model.graph.node]
    assert ops.count("Conv") == 53 and ops.count("Add") == 16 and ops.count("MaxPool") == 1


def test_official_interface_with_dynamic_batch(untrained_model: onnx.ModelProto) -> None:
    graph = untrained_model.graph
    (model_input,) = graph.input
    assert model_input.name == "input_tensor:0"
    dims = model_input.type.tensor_type.shape.dim
    assert dims[0].dim_param and [d.dim_value for d in dims[1:]] == [3, 224, 224]
    outputs = {o.name: o.type.tensor_type for o in graph.output}
    assert set(outputs) == {"ArgMax:0", "softmax_tensor:0"}
    assert outputs["ArgMax:0"].elem_type == onnx.TensorProto.INT64
    assert outputs["softmax_tensor:0"].elem_type == onnx.TensorProto.FLOAT
    assert outputs["softmax_tensor:0"].shape.dim[1].dim_value == 1001
    assert {p.key: p.value for p in untrained_model.metadata_props}[
        "mlperf_harness.stand_in"
    ] == "true"

    session = _session(untrained_model)
    for batch in (1, 3):
        images = np.random.default_rng(batch).normal(0, 50, (batch, 3, 224, 224)).astype(np.float32)
        argmax, softmax = session.run(["ArgMax:0", "softmax_tensor:0"], {"input_tensor:0": images})
        assert argmax.shape == (batch,) and argmax.dtype == np.int64
        assert softmax.shape == (batch, 1001)
        np.testing.assert_allclose(softmax.sum(axis=1), 1.0, rtol=1e-5)


def test_random_weights_depend_on_the_seed_only() -> None:
    first, again, other = (stand_in.random_conv_weights(s) for s in (0, 0, 1))
    name = stand_in.STEM.name
    assert np.array_equal(first[name], again[name])
    assert not np.array_equal(first[name], other[name])


@dataclass(frozen=True)
class CliBuild:
    exit_code: int
    stdout: str
    out_dir: Path


@pytest.fixture(scope="module")
def default_build(tmp_path_factory: pytest.TempPathFactory) -> CliBuild:
    """The real default build (600 training, 300 held-out images), run through the CLI.

    About a minute on 2 cores when the machine is otherwise idle; its tests are marked slow.
    """
    out_dir = tmp_path_factory.mktemp("stand_in")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        exit_code = main(["--out_dir", str(out_dir), "--seed", "0"])
    return CliBuild(exit_code, stdout.getvalue(), out_dir)


@pytest.mark.slow  # the full default build: minutes on 2 cores
def test_default_build_reaches_the_required_top1(default_build: CliBuild) -> None:
    assert default_build.exit_code == 0, default_build.stdout
    match = re.search(r"held-out FP32 top-1: [\d.]+% \((\d+)/(\d+),", default_build.stdout)
    assert match, default_build.stdout
    correct, count = int(match.group(1)), int(match.group(2))
    assert count == stand_in.ImageCounts().validation
    assert correct / count >= stand_in.REQUIRED_TOP1


@pytest.mark.slow  # the full default build: minutes on 2 cores
def test_default_build_files(default_build: CliBuild) -> None:
    model_path = default_build.out_dir / stand_in.MODEL_FILE_NAME
    digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
    assert f"sha256 {digest}" in default_build.stdout
    assert not [p for p in default_build.out_dir.iterdir() if p.name.endswith(".tmp")]
    onnx.checker.check_model(str(model_path))
    counts = stand_in.ImageCounts()
    expected = {
        "train": counts.train,
        "calibration": counts.calibration,
        "validation": counts.validation,
    }
    for split, count in expected.items():
        assert len(parse_val_map(default_build.out_dir / "images" / split / "val_map.txt")) == count


@pytest.mark.slow  # the full default build: minutes on 2 cores
def test_default_model_classifies_held_out_images(default_build: CliBuild) -> None:
    """An independent check of the measured top-1: our own loop over held-out images, both outputs."""
    val_map = default_build.out_dir / "images" / "validation" / "val_map.txt"
    entries = parse_val_map(val_map)[:60]
    images = np.stack([preprocess_file(val_map.parent / name) for name, _ in entries])
    labels = np.array([label for _, label in entries])
    session = _session(default_build.out_dir / stand_in.MODEL_FILE_NAME)
    argmax, softmax = session.run(["ArgMax:0", "softmax_tensor:0"], {"input_tensor:0": images})
    assert np.array_equal(argmax, softmax.argmax(axis=1))
    assert np.mean(argmax - 1 == labels) >= stand_in.REQUIRED_TOP1
    # Only the rows of the generated classes (1..10) ever win; background and the rest never do.
    assert set(argmax.tolist()) <= {label + 1 for label in synthetic.IMAGENET_LABELS}


def _small_build(root: Path) -> tuple[stand_in.StandInReport, bytes]:
    counts = stand_in.ImageCounts(bn_statistics=16, train=30, calibration=2, validation=10)
    report = stand_in.build_stand_in_model(root / "model.onnx", root, 3, counts, progress=False)
    return report, report.model_path.read_bytes()


@pytest.mark.slow  # two builds: half a minute on 2 cores
def test_rebuild_with_the_same_seed_is_bit_identical(tmp_path: Path) -> None:
    """Reduced image counts keep this fast; the recipe and the code path are the default build's."""
    first, first_bytes = _small_build(tmp_path / "first")
    second, second_bytes = _small_build(tmp_path / "second")
    assert first_bytes == second_bytes
    assert first.sha256 == second.sha256 == hashlib.sha256(first_bytes).hexdigest()
    assert first.heldout_count == 10 and first.heldout_correct == second.heldout_correct
    metadata: Mapping[str, str] = {
        p.key: p.value
        for p in onnx.load(str(first.model_path), load_external_data=False).metadata_props
    }
    assert metadata["mlperf_harness.seed"] == "3"


@pytest.mark.parametrize(
    "counts",
    [
        stand_in.ImageCounts(bn_statistics=0),
        stand_in.ImageCounts(bn_statistics=20, train=10),
    ],
)
def test_bad_counts_are_user_errors(tmp_path: Path, counts: stand_in.ImageCounts) -> None:
    with pytest.raises(HarnessError):
        stand_in.build_stand_in_model(tmp_path / "m.onnx", tmp_path, 0, counts, progress=False)


def test_cli_reports_a_user_error_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--out_dir", str(tmp_path / "out"), "--seed", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
