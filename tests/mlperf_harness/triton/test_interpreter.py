"""Which interpreter a Triton server may run on (Triton's Python backend links the system's
libpython), checked against this host's real interpreters and libraries."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pytest
from one_line_errors import raised_line

from mlperf_harness.triton import interpreter


def test_module_path_leaves_out_this_interpreters_standard_library() -> None:
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    kept = interpreter.module_path(
        [stdlib, "/some/packages", "/some/packages", stdlib + "/lib-dynload"]
    )
    assert kept == [os.path.realpath("/some/packages")]


def test_a_stub_without_libpython_is_refused_in_one_line() -> None:
    # /bin/true links no libpython: as a stub whose libpython this host lacks.
    current = interpreter.this_interpreter()
    line = raised_line(interpreter.matching_interpreter, Path("/bin/true"), current, "")
    assert f"libpython{current.minor}" in line and "install it" in line


def test_this_interpreter_is_probed_as_it_describes_itself() -> None:
    probed = interpreter.probe(sys.executable)
    assert probed is not None and probed.version == interpreter.this_interpreter().version
    assert interpreter.probe("/nonexistent/python3") is None


def test_server_environment_lists_the_paths(tmp_path: Path) -> None:
    base = interpreter.this_interpreter()
    python = interpreter.server_environment(base, ["/a", "/b"], tmp_path / "env")
    assert python.resolve() == Path(base.path).resolve()
    pth = (
        tmp_path
        / "env"
        / "lib"
        / f"python{base.minor}"
        / "site-packages"
        / "mlperf_harness_paths.pth"
    )
    assert pth.read_text() == "/a\n/b\n"
    assert "include-system-site-packages = false" in (tmp_path / "env" / "pyvenv.cfg").read_text()


@pytest.mark.skipif(
    not Path(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}").exists(),
    reason="no distribution CPython of this version",
)
def test_the_distributions_interpreter_matches_its_own_library() -> None:
    found = interpreter.probe(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}")
    assert (
        found is not None
        and found.library is not None
        and found.library.name.startswith("libpython")
    )


def test_the_server_environment_is_built_once_and_reused(tmp_path: Path) -> None:
    base = interpreter.this_interpreter()
    paths = [str(tmp_path / "packages")]
    first = interpreter.shared_environment(base, paths)
    assert interpreter.shared_environment(base, paths) == first
    assert first.parent.parent.name.startswith("mlperf-triton-python-")
    assert not list(
        first.parent.parent.parent.glob(f"{first.parent.parent.name}.*")
    )  # no staging left
