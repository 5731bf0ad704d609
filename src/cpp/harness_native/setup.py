"""Builds mlperf_harness.native._native, the harness's hot loops in C++ (see src/module.cpp).

Only the extension module is in the wheel: the `mlperf_harness.native` package around it (its typed
wrapper and the .pyi stub) is ordinary first-party source under src/python.
"""

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

setup(
    name="mlperf-harness-native",
    version="0.1.0",
    description="The MLPerf harness's hot loops in C++ (pybind11), run with the GIL released",
    ext_modules=[
        Pybind11Extension(
            "mlperf_harness.native._native",
            ["src/module.cpp"],
            cxx_std=17,
            extra_compile_args=["-O3", "-g0", "-pthread"],
            extra_link_args=["-pthread", "-ldl"],
        )
    ],
    packages=[],
    zip_safe=False,
)
