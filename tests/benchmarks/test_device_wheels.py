"""benchmarks/device_wheels.sh --check: which wheels in .whl/ it keeps, which it calls stale or
missing, and the pins it reads, on a made-up .whl/ and constraints.txt (no build, no network)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path("benchmarks/device_wheels.sh")
BUNDLE = Path("benchmarks/triton_bundle.sh")
PLATFORM_FLAGS = Path("benchmarks/cp312_wheel_target.sh")  # sourced by it
PINS = {
    "mlcommons_loadgen": "6.0.17",
    "tqdm": "4.70.1",
    "tokenizers": "0.23.3",
    "nibabel": "5.4.2",
    "scipy": "1.17.1",
    "nvidia-pytriton": "0.7.0",
    "tritonclient": "2.73.0",
    "numpy": "1.26.4",
}
CURRENT = [
    "mlperf_harness_native-0.1.0-cp312-cp312-linux_x86_64.whl",
    "mlcommons_loadgen-6.0.17-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "tqdm-4.70.1-py3-none-any.whl",
    "tokenizers-0.23.3-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "nibabel-5.4.2-py3-none-any.whl",
]


def _check(
    tmp_path: Path, wheels: list[str], *groups: str, pins: dict[str, str] = PINS
) -> tuple[int, list[str]]:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(
        "# Generated. Do not edit by hand.\n" + "".join(f"{n}=={v}\n" for n, v in pins.items())
    )
    folder = tmp_path / "whl"
    for name in wheels:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"")
    bash = shutil.which("bash") or "/bin/bash"
    done = subprocess.run(
        [bash, str(SCRIPT), "--check", *groups],
        env={**os.environ, "WHEELS": str(folder), "CONSTRAINTS": str(constraints)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stderr == ""
    return done.returncode, done.stdout.splitlines()


def _lines(lines: list[str], word: str) -> list[str]:
    return [line for line in lines if line.startswith("device_wheels: ") and word in line]


def test_wheels_at_their_pins_for_cpython_312_are_kept(tmp_path: Path) -> None:
    code, lines = _check(tmp_path, CURRENT, "core")
    assert code == 0
    assert len(_lines(lines, "up to date")) == 4  # the native module has no pin: present
    assert _lines(lines, "FAILED") == []
    assert _lines(lines, "mlperf_harness_native: present")
    carry = next(line for line in lines if line.startswith("carry for gpu_scenarios.sh"))
    assert all(f'/whl/{name}"' in carry for name in CURRENT)
    assert not (tmp_path / "whl" / ".partial").exists()  # a check writes nothing


def test_other_versions_and_other_pythons_are_stale(tmp_path: Path) -> None:
    wheels = [
        *CURRENT[:2],
        "tqdm-4.66.0-py3-none-any.whl",  # an older pin
        "tokenizers-0.23.3-cp39-cp39-manylinux_2_17_x86_64.whl",  # the pin, for another Python
        *CURRENT[4:],
        "nibabel-5.3.0-py3-none-any.whl",  # a second version beside the right one
    ]
    code, lines = _check(tmp_path, wheels, "core")
    assert code == 1
    assert _lines(lines, "FAILED") == [
        "device_wheels: FAILED tqdm 4.70.1: missing (stale: tqdm-4.66.0-py3-none-any.whl)",
        "device_wheels: FAILED tokenizers 0.23.3: missing"
        " (stale: tokenizers-0.23.3-cp39-cp39-manylinux_2_17_x86_64.whl)",
        "device_wheels: FAILED nibabel 5.4.2: nibabel-5.3.0-py3-none-any.whl is stale (a run removes it)",
    ]
    assert _lines(lines, "mlcommons-loadgen 6.0.17: up to date")


def test_a_package_without_a_pin_fails_with_one_line(tmp_path: Path) -> None:
    pins = {name: version for name, version in PINS.items() if name != "tqdm"}
    code, lines = _check(tmp_path, CURRENT, "core", pins=pins)
    assert code == 1
    assert _lines(lines, "FAILED") == [
        f"device_wheels: FAILED tqdm: no tqdm== pin in {tmp_path / 'constraints.txt'}"
    ]


def test_the_pins_follow_constraints_txt(tmp_path: Path) -> None:
    code, lines = _check(tmp_path, [], "scipy", pins={**PINS, "scipy": "1.18.0"})
    assert code == 1
    assert _lines(lines, "FAILED") == ["device_wheels: FAILED scipy 1.18.0: missing"]
    code, lines = _check(
        tmp_path,
        ["optional/scipy-1.18.0-cp312-cp312-manylinux_2_28_x86_64.whl"],
        "scipy",
        pins={**PINS, "scipy": "1.18.0"},
    )
    assert code == 0


def _bundle(tmp_path: Path, wheels: list[str], recipe: str | None = None) -> None:
    folder = tmp_path / "whl" / "triton"
    folder.mkdir(parents=True)
    (folder / "triton-cp312.tar.xz").write_bytes(b"")
    (folder / "wheels.txt").write_text("".join(f"{name}\n" for name in wheels))
    if recipe is None:  # as device_wheels.sh records it: the bundle's scripts, comments aside
        text = "".join(
            line
            for script in (BUNDLE, PLATFORM_FLAGS)
            for line in script.read_text().splitlines(keepends=True)
            if not line.lstrip().startswith("#")
        )
        recipe = hashlib.sha256(text.encode()).hexdigest()
    (folder / "recipe.sha256").write_text(f"{recipe}\n")


BUNDLED = [
    "numpy-1.26.4-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl",
    "tritonclient-2.73.0-py3-none-manylinux1_x86_64.whl",
]


def test_the_triton_bundle_is_current_while_its_wheels_keep_their_pins(tmp_path: Path) -> None:
    _bundle(tmp_path, BUNDLED)
    code, lines = _check(tmp_path, [], "triton")
    assert code == 0, lines
    assert _lines(lines, "triton bundle: up to date")
    code, lines = _check(tmp_path, [], "triton", pins={**PINS, "numpy": "1.26.5"})
    assert code == 1
    assert _lines(lines, "FAILED") == [
        "device_wheels: FAILED triton bundle: it holds numpy 1.26.4, pinned 1.26.5"
    ]


def test_a_changed_bundle_recipe_makes_the_bundle_stale(tmp_path: Path) -> None:
    _bundle(tmp_path, BUNDLED, recipe="0" * 64)
    code, lines = _check(tmp_path, [], "triton")
    assert code == 1
    assert _lines(lines, "FAILED") == [
        "device_wheels: FAILED triton bundle: benchmarks/triton_bundle.sh changed (or its"
        " platform flags)"
    ]


def test_every_wheel_of_the_diffusers_group_has_a_pin(tmp_path: Path) -> None:
    """SDXL's GPU wheels: each pinned in constraints.txt or, GPU-host only, gpu_constraints.txt."""
    folder = tmp_path / "whl"
    folder.mkdir()
    done = subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(SCRIPT), "--check", "diffusers"],
        env={**os.environ, "WHEELS": str(folder)},
        capture_output=True,
        text=True,
        check=False,
    )
    failed = _lines(done.stdout.splitlines(), "FAILED")
    assert failed and all(line.endswith(": missing") for line in failed), failed
    assert any(line.startswith("device_wheels: FAILED diffusers 0.42.1:") for line in failed)
