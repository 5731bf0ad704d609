"""Which Python the Triton server may run on.

Triton's Python backend runs each model in a stub process, `triton_python_backend_stub`, built for
one CPython minor version; it links the *system's* `libpython3.X.so.1.0` and imports the standard
library of whichever `python3` is first on PATH (the server puts its interpreter's bin/ there).
The two must be the same build: under pyenv's 3.11.7 with Debian's libpython 3.11.2 the model failed
to load (`'_thread.RLock' object has no attribute '_recursion_count'`: 3.11.7's threading.py on
3.11.2's C code). So a server interpreter matches when the shared library it was built with is the
file the stub loads; a virtual environment matches when its base interpreter does.

The server starts on the interpreter it is given; if that one does not match, it re-runs itself on
one that does (the distribution's `python3.X`), with the same modules on its path, or refuses in
one line that says what to install.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlperf_harness.errors import HarnessError

# Set in the re-run server's environment: a second mismatch there is an error, not another re-run.
RERUN_ENV = "MLPERF_TRITON_RERUN"
_PROBE = (
    "import json, sys, sysconfig; v = sysconfig.get_config_var; print(json.dumps("
    "{'version': list(sys.version_info[:3]), 'libdir': v('LIBDIR'), 'soname': v('INSTSONAME')}))"
)


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: tuple[int, int, int]
    library: Path | None  # the shared libpython it was built with, where it has one

    @property
    def minor(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def this_interpreter() -> Interpreter:
    return Interpreter(
        sys.executable,
        (sys.version_info[0], sys.version_info[1], sys.version_info[2]),
        _library(sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")),
    )


def _library(libdir: object, soname: object) -> Path | None:
    if not isinstance(libdir, str) or not isinstance(soname, str) or ".so" not in soname:
        return None  # a static build (pyenv's default): no shared library to compare
    path = Path(libdir) / soname
    return path.resolve() if path.exists() else None


def probe(python: str) -> Interpreter | None:
    """What `python` is, or None when it does not run."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=30, check=True
        )
        found = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    version = tuple(int(part) for part in found["version"])
    return Interpreter(
        python, (version[0], version[1], version[2]), _library(found["libdir"], found["soname"])
    )


def stub_library(stub: Path) -> Path | None:
    """The libpython the stub loads on this host (as the dynamic linker resolves it), or None when
    it finds none."""
    try:
        listing = subprocess.run(
            ["ldd", str(stub)], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"libpython3\.\d+\.so[.\d]*\s+=>\s+(\S+)", listing)
    if found is None or found.group(1) == "not":
        return None
    return Path(found.group(1)).resolve()


def candidates(minor: str, path_env: str | None) -> list[str]:
    """Where a distribution's CPython of this minor version lives, most likely first."""
    names = [f"/usr/bin/python{minor}", f"/usr/local/bin/python{minor}"]
    on_path = shutil.which(f"python{minor}", path=path_env)
    if on_path is not None:
        names.append(on_path)
    seen: set[str] = set()
    return [name for name in names if not (name in seen or seen.add(name))]  # type: ignore[func-returns-value]


def matching_interpreter(stub: Path, current: Interpreter, path_env: str | None) -> Interpreter:
    """The current interpreter if the stub's libpython is its own, else another one of the same
    minor version (our compiled modules are built for it) whose is; HarnessError when none is."""
    wanted = stub_library(stub)
    if wanted is None:
        raise HarnessError(
            f"Triton's Python backend for CPython {current.minor} needs libpython{current.minor}.so.1.0, "
            f"which this host lacks: install it (Debian/Ubuntu: apt-get install libpython{current.minor})"
        )
    if current.library == wanted:
        return current
    tried = []
    for name in candidates(current.minor, path_env):
        found = probe(name)
        if (
            found is not None
            and found.library == wanted
            and found.version[:2] == current.version[:2]
        ):
            return found
        tried.append(name)
    where = ", ".join(tried) or f"python{current.minor} on PATH"
    raise HarnessError(
        f"the Triton server must run on the CPython {current.minor} that owns {wanted} (Triton's "
        f"Python backend links it), not {current.path} ({'.'.join(map(str, current.version))}); none "
        f"found ({where}): install the distribution's python{current.minor} or run the server with it"
    )


def module_path(entries: Sequence[str]) -> list[str]:
    """This process's import path without this interpreter's standard library: what another
    interpreter of the same minor version needs to import our code and its packages."""
    paths = sysconfig.get_paths()
    stdlib = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib")}
    stdlib |= {os.path.join(path, "lib-dynload") for path in stdlib}
    zipped = os.path.realpath(
        os.path.join(
            sys.base_prefix, "lib", f"python{sys.version_info[0]}{sys.version_info[1]}.zip"
        )
    )
    kept = []
    for entry in entries:
        real = os.path.realpath(entry or os.getcwd())
        if real in stdlib or real == zipped or real in kept:
            continue
        kept.append(real)
    return kept


def server_environment(base: Interpreter, paths: Sequence[str], directory: Path) -> Path:
    """A virtual environment over `base` in `directory` whose site-packages lists `paths` (a .pth
    file); returns its python. The server runs on it so that the stub, which takes its standard
    library and packages from the environment of the `python3` first on PATH (the server puts this
    environment's bin/ there), imports what the server imports: our harness and its packages
    (and PyTriton's proxy under --triton_runtime pytriton)."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "python3", f"python{base.minor}"):
        (bin_dir / name).symlink_to(base.path)
    home = Path(base.path).parent
    version = ".".join(map(str, base.version))
    (directory / "pyvenv.cfg").write_text(
        f"home = {home}\ninclude-system-site-packages = false\nversion = {version}\n"
    )
    site = directory / "lib" / f"python{base.minor}" / "site-packages"
    site.mkdir(parents=True)
    (site / "mlperf_harness_paths.pth").write_text("".join(f"{path}\n" for path in paths))
    return bin_dir / f"python{base.minor}"


def shared_environment(base: Interpreter, paths: Sequence[str]) -> Path:
    """The server environment for this interpreter and path, built once per machine and reused
    (a server killed with SIGKILL leaves nothing behind): named by their digest in the temporary
    directory, built aside and renamed into place whole."""
    digest = hashlib.sha256(repr((base.path, base.version, list(paths))).encode()).hexdigest()[:16]
    final = Path(tempfile.gettempdir()) / f"mlperf-triton-python-{digest}"
    python = final / "bin" / f"python{base.minor}"
    if python.exists():
        return python
    staging = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
    server_environment(base, paths, staging / "env")
    try:
        os.rename(staging / "env", final)
    except OSError:
        if not python.exists():  # not another server's rename: a real failure
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return python


def rerun_on(base: Interpreter, module: str, argv: Sequence[str]) -> None:
    """Replace this process by `python -m module argv` in a server environment over `base`
    (server_environment), importing what this process imports."""
    if os.environ.get(RERUN_ENV):
        raise HarnessError(
            f"the Triton server re-ran on {base.path} and still does not match Triton's "
            "Python backend: compare `ldd` on the stub with that interpreter's libpython"
        )
    python = shared_environment(base, module_path(sys.path))
    env = dict(os.environ)
    env[RERUN_ENV] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(python, [str(python), "-m", module, *argv], env)


def in_own_environment() -> bool:
    return bool(os.environ.get(RERUN_ENV))
