"""Which LoadGen a harness run goes through (`--loadgen_path`).

python -- LoadGen's own Python binding (`mlperf_loadgen`): each issued query becomes a Python list
           of QuerySample objects on LoadGen's issue thread, under the GIL, and each batch is
           completed through `mlperf_loadgen.QuerySamplesComplete`.
native -- the same LoadGen version's C++ compiled into our native module, driven through its C++
          API (loadgen/native_run.py): queries go straight to the native batch source and
          completions straight to that LoadGen, no Python object and no GIL per query. The logs
          are LoadGen's own either way (docs/scaling.md has what each path reaches).
"""

from __future__ import annotations

PYTHON = "python"
NATIVE = "native"
LOADGEN_PATHS = (PYTHON, NATIVE)
# Systems that need the native path choose it in their configs (docs/scaling.md).
DEFAULT_LOADGEN_PATH = PYTHON
