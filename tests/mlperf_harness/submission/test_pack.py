"""Packing a staged tree: the tarball and its sha1, deterministic and written atomically."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from mlperf_harness.errors import HarnessError
from mlperf_harness.submission import pack as pack_module
from mlperf_harness.submission.pack import pack, tarball_name

SUBMITTER = "Acme"


def _tree(root: Path) -> Path:
    """A small staged tree: closed/ and open/ for Acme, another submitter, and staging debris."""
    files = {
        f"closed/{SUBMITTER}/systems/box.json": '{"division": "closed"}\n',
        f"closed/{SUBMITTER}/src/README.md": "# code\n",
        f"closed/{SUBMITTER}/documentation/calibration.md": "# Calibration\n",
        f"closed/{SUBMITTER}/results/box/resnet50/Offline/performance/run_1/mlperf_log_summary.txt": (
            "Result is : VALID\n"
        ),
        f"closed/{SUBMITTER}/results/box/resnet50/Offline/accuracy/accuracy.txt": "accuracy=76%\n",
        f"closed/{SUBMITTER}/results/box/resnet50/Offline/user.conf": "# none\n",
        f"open/{SUBMITTER}/systems/box.json": '{"division": "open"}\n',
        "closed/Other/systems/x.json": "{}\n",
        ".staging-abc/closed/Acme/stale.txt": "half\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_tarball_and_sha1(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    tarball, sha1 = pack(tree, tmp_path / "out", SUBMITTER)
    assert tarball == tmp_path / "out" / "mlperf-inference-Acme-submission.tar.gz"
    assert tarball.name == tarball_name(SUBMITTER)
    assert sha1 == tmp_path / "out" / "mlperf-inference-Acme-submission.sha1"
    digest = hashlib.sha1(tarball.read_bytes()).hexdigest()
    assert sha1.read_text() == f"{digest}  {tarball.name}\n"
    with tarfile.open(tarball) as archive:
        members = archive.getmembers()
    names = [member.name for member in members]
    assert names == sorted(names, key=lambda name: name.split("/"))  # parents before children
    assert names[:2] == ["closed", f"closed/{SUBMITTER}"]
    assert {"open", f"open/{SUBMITTER}"} <= set(names)
    files = {member.name for member in members if member.isfile()}
    assert files == {
        f"closed/{SUBMITTER}/systems/box.json",
        f"closed/{SUBMITTER}/src/README.md",
        f"closed/{SUBMITTER}/documentation/calibration.md",
        f"closed/{SUBMITTER}/results/box/resnet50/Offline/performance/run_1/mlperf_log_summary.txt",
        f"closed/{SUBMITTER}/results/box/resnet50/Offline/accuracy/accuracy.txt",
        f"closed/{SUBMITTER}/results/box/resnet50/Offline/user.conf",
        f"open/{SUBMITTER}/systems/box.json",
    }
    for member in members:
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (
            0,
            0,
            0,
            "",
            "",
        )
        assert member.mode == (0o755 if member.isdir() else 0o644)
    # What comes out is what went in.
    unpacked = tmp_path / "unpacked"
    with tarfile.open(tarball) as archive:
        archive.extractall(unpacked, filter="data")
    for name in files:
        assert (unpacked / name).read_bytes() == (tree / name).read_bytes()


def test_sha1sum_reads_the_sha1_file(tmp_path: Path) -> None:
    if shutil.which("sha1sum") is None:
        pytest.skip("sha1sum is not installed")
    _tarball, sha1 = pack(_tree(tmp_path / "tree"), tmp_path / "out", SUBMITTER)
    done = subprocess.run(
        ["sha1sum", "-c", sha1.name], cwd=sha1.parent, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_same_tree_same_bytes(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    first, first_sha1 = pack(tree, tmp_path / "a", SUBMITTER)
    for path in tree.rglob("*"):  # other times and a looser mode change nothing
        os.utime(path, (1_000_000, 1_000_000))
    (tree / f"closed/{SUBMITTER}/src/README.md").chmod(0o600)
    second, second_sha1 = pack(tree, tmp_path / "b", SUBMITTER)
    assert first.read_bytes() == second.read_bytes()
    assert first_sha1.read_text() == second_sha1.read_text()
    # Packing again into the same place replaces both files and leaves nothing else.
    (tree / f"closed/{SUBMITTER}/src/README.md").write_text("# changed\n")
    third, third_sha1 = pack(tree, tmp_path / "a", SUBMITTER)
    assert third == first and third.read_bytes() != second.read_bytes()
    assert third_sha1.read_text().split()[0] == hashlib.sha1(third.read_bytes()).hexdigest()
    assert sorted(path.name for path in (tmp_path / "a").iterdir()) == [
        "mlperf-inference-Acme-submission.sha1",
        "mlperf-inference-Acme-submission.tar.gz",
    ]


def test_interrupted_pack_keeps_the_old_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path / "tree")
    out = tmp_path / "out"
    tarball, sha1 = pack(tree, out, SUBMITTER)
    before = (tarball.read_bytes(), sha1.read_text())
    calls = 0
    original = pack_module._add

    def interrupt_midway(*args: object, **kwargs: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 5:
            raise KeyboardInterrupt
        original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pack_module, "_add", interrupt_midway)
    (tree / f"closed/{SUBMITTER}/src/README.md").write_text("# changed\n")
    with pytest.raises(KeyboardInterrupt):
        pack(tree, out, SUBMITTER)
    assert (tarball.read_bytes(), sha1.read_text()) == before
    assert sorted(path.name for path in out.iterdir()) == [sha1.name, tarball.name]


def test_nothing_to_pack(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    with pytest.raises(HarnessError, match=r"nothing to pack: .* for 'Nobody'"):
        pack(tree, tmp_path / "out", "Nobody")


def test_links_are_refused(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / f"closed/{SUBMITTER}/src/link.md").symlink_to(
        tree / f"closed/{SUBMITTER}/src/README.md"
    )
    with pytest.raises(HarnessError, match="is a link"):
        pack(tree, tmp_path / "out", SUBMITTER)
    assert not list((tmp_path / "out").iterdir())
