"""LoadGen's C++ sources for the native module, from MLCommons' own source distribution.

The harness can run LoadGen without its Python binding (src/module.cpp, "LoadGen's C++ API"), so
the same LoadGen that `mlperf_loadgen` is built from is compiled into our extension: the
`mlcommons-loadgen` sdist of exactly the version we pin (3rdparty/python/constraints.txt), checked
against the sha256 below before anything in it is used. Nothing of LoadGen is kept in this repo.

Where the archive comes from: `MLPERF_LOADGEN_SDIST` (a path to the .tar.gz, for a machine
without a package index), else `pip download` from pip's configured index. Pants' build runs pip
with PIP_CONFIG_FILE=/dev/null (pants.toml), i.e. pip's default index. `--no-build-isolation`:
pip prepares the sdist's metadata with the build environment's own setuptools and pybind11 (see
pyproject.toml) instead of fetching LoadGen's build requirements.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "6.0.17"  # must equal mlcommons_loadgen's pin in 3rdparty/python/constraints.txt
ARCHIVE = f"mlcommons_loadgen-{VERSION}.tar.gz"
SHA256 = "a2e85d09e3cc0c606f89bfe1fbf97537c8b5b238ae0afbd923ad9c710fcf2ca8"
SDIST_ENV = "MLPERF_LOADGEN_SDIST"

# LoadGen's library sources (its setup.py's lib_sources plus the version file it generated for
# this sdist); not its bindings: the harness has its own (src/loadgen_harness.hpp).
SOURCES = (
    "early_stopping.cc",
    "issue_query_controller.cc",
    "loadgen.cc",
    "logging.cc",
    "test_settings_internal.cc",
    "utils.cc",
    "version.cc",
    "results.cc",
    "generated/version_generated.cc",
)


class LoadgenSourceError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(into: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--no-build-isolation",
        "--dest",
        str(into),
        f"mlcommons-loadgen=={VERSION}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    archive = into / ARCHIVE
    if done.returncode != 0 or not archive.is_file():
        raise LoadgenSourceError(
            f"could not fetch LoadGen's sources ({ARCHIVE}) with pip (exit {done.returncode}); "
            f"set {SDIST_ENV} to a downloaded copy. pip said:\n{done.stdout}{done.stderr}"
        )
    return archive


def _unpack(archive: Path, into: Path) -> Path:
    top = f"mlcommons_loadgen-{VERSION}"
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if not parts or parts[0] != top or ".." in parts or member.islnk() or member.issym():
                raise LoadgenSourceError(f"{archive}: unexpected member {member.name!r}")
        # Every member checked above; tarfile's "data" filter (Python >= 3.11.4) checks again.
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)
    return into / top


def loadgen_source_dir(work_dir: Path) -> Path:
    """LoadGen's unpacked, verified sources under `work_dir` (fetched on the first call)."""
    target = work_dir / f"mlcommons_loadgen-{VERSION}"
    marker = target / ".verified"
    if marker.is_file() and marker.read_text() == SHA256:
        return target
    work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work_dir) as scratch:
        given = os.environ.get(SDIST_ENV)
        archive = Path(given) if given else _download(Path(scratch))
        if not archive.is_file():
            raise LoadgenSourceError(f"{SDIST_ENV}={given}: no such file")
        got = _sha256(archive)
        if got != SHA256:
            raise LoadgenSourceError(
                f"{archive} has sha256 {got}, not {SHA256} (mlcommons-loadgen {VERSION})"
            )
        unpacked = _unpack(archive, Path(scratch) / "unpacked")
        missing = [name for name in (*SOURCES, "loadgen.h") if not (unpacked / name).is_file()]
        if missing:
            raise LoadgenSourceError(f"{archive} lacks {', '.join(missing)}")
        (unpacked / ".verified").write_text(SHA256)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(unpacked, target)
    return target
