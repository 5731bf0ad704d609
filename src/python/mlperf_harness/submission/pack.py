"""Pack a staged submission as MLCommons asks: a tar.gz of the submitter's division directories and
a .sha1 file beside it (what MLCommons' pack_submission.sh makes, without its optional encryption).

The archive is deterministic (members in sorted order, fixed times, owners and modes, a gzip header
without time or name): the same tree gives the same bytes and so the same sha1. Both files are
written atomically; the old .sha1 goes first, so an interrupted pack never pairs a new archive with
an old hash.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
import tempfile
from pathlib import Path
from typing import BinaryIO

from mlperf_harness.atomic import TEMP_SUFFIX, write_bytes_atomic
from mlperf_harness.errors import HarnessError
from mlperf_harness.write_errors import writing

DIVISION_DIRS = ("closed", "open", "network")  # what MLCommons' checker walks
_CHUNK = 1 << 20


def tarball_name(submitter: str) -> str:
    return f"mlperf-inference-{submitter}-submission.tar.gz"


def pack(tree: Path, out_dir: Path, submitter: str) -> tuple[Path, Path]:
    """Pack `<tree>/<division>/<submitter>/` of every division present; returns (tarball, sha1)."""
    roots = [tree / division / submitter for division in DIVISION_DIRS]
    roots = [root for root in roots if root.is_dir()]
    if not roots:
        raise HarnessError(
            f"nothing to pack: {tree} has no {'/, '.join(DIVISION_DIRS)}/ directory for"
            f" {submitter!r} (stage the results first)"
        )
    tarball = out_dir / tarball_name(submitter)
    sha1_file = out_dir / f"{tarball.name[: -len('.tar.gz')]}.sha1"
    with writing(out_dir):  # a full disk or a read-only directory: one line
        out_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{tarball.name}.", suffix=TEMP_SUFFIX, dir=out_dir)
        try:
            with os.fdopen(fd, "wb") as raw:
                _write_archive(raw, tree, roots)
            digest = _sha1(Path(tmp_name))
            os.chmod(tmp_name, 0o644)
            sha1_file.unlink(missing_ok=True)
            os.replace(tmp_name, tarball)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    # sha1sum's own format, which `sha1sum -c` reads back.
    write_bytes_atomic(sha1_file, f"{digest}  {tarball.name}\n".encode())
    return tarball, sha1_file


def _write_archive(raw: BinaryIO, tree: Path, roots: list[Path]) -> None:
    # mtime=0 and no file name: gzip's header would otherwise carry both.
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as compressed,
        tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        paths = {root.parent for root in roots} | set(roots)  # closed/, closed/<submitter>/
        for root in roots:
            for directory, subdirs, files in os.walk(root):  # links are not followed but refused
                paths.update(Path(directory) / name for name in subdirs + files)
        # Sorted by path components (os.walk's order is the file system's): parents first.
        for path in sorted(paths, key=lambda path: path.relative_to(tree).parts):
            _add(archive, tree, path)


def _add(archive: tarfile.TarFile, tree: Path, path: Path) -> None:
    if path.is_symlink():
        raise HarnessError(f"{path} is a link: a submission holds plain files only")
    info = tarfile.TarInfo(path.relative_to(tree).as_posix())
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if path.is_dir():
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        archive.addfile(info)
        return
    if not path.is_file():
        raise HarnessError(f"{path} is not a plain file or directory")
    executable = os.access(path, os.X_OK)
    info.mode = 0o755 if executable else 0o644
    info.size = path.stat().st_size
    with path.open("rb") as source:
        archive.addfile(info, source)


def _sha1(path: Path) -> str:
    digest = hashlib.sha1()  # what MLCommons asks for beside the tarball, not for security
    with path.open("rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
