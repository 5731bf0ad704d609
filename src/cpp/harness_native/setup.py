"""Builds mlperf_harness.native._native, the harness's hot loops in C++ (see src/module.cpp), with
LoadGen's C++ compiled in (the pinned mlcommons-loadgen sdist's sources: loadgen_sources.py).

Only the extension module is in the wheel: the `mlperf_harness.native` package around it (its typed
wrapper and the .pyi stub) is ordinary first-party source under src/python.
"""

import os
import sys
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen_sources  # noqa: E402 (beside this file, which setuptools does not put on the path)

# LoadGen's nine files and ours compile side by side (NPY_NUM_BUILD_JOBS caps it; default: all CPUs).
ParallelCompile("NPY_NUM_BUILD_JOBS", default=0).install()


class BuildWithLoadgen(build_ext):
    """Adds LoadGen's sources and headers to the extension, fetched and verified at build time."""

    def build_extensions(self) -> None:
        source_dir = loadgen_sources.loadgen_source_dir(Path(self.build_temp).resolve() / "loadgen")
        for extension in self.extensions:
            extension.sources += [str(source_dir / name) for name in loadgen_sources.SOURCES]
            extension.include_dirs.append(str(source_dir))
        super().build_extensions()


setup(
    name="mlperf-harness-native",
    version="0.1.0",
    description="The MLPerf harness's hot loops in C++ (pybind11), run with the GIL released",
    ext_modules=[
        Pybind11Extension(
            "mlperf_harness.native._native",
            ["src/module.cpp"],
            depends=sorted(str(path) for path in Path("src").glob("*.hpp")),
            cxx_std=17,
            # LoadGen's own copy lives in this module: every symbol hidden (pybind11's default
            # visibility) and bound locally, so it never meets mlperf_loadgen's copy.
            extra_compile_args=["-O3", "-g0", "-pthread"],
            extra_link_args=["-pthread", "-ldl", "-Wl,-Bsymbolic"],
        )
    ],
    cmdclass={"build_ext": BuildWithLoadgen},
    packages=[],
    zip_safe=False,
)
