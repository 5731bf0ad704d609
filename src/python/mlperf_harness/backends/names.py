"""The names of the inference backends, apart from their factories (backends/registry.py): the
settings table (config/fields.py) validates a config's `backend` against them, and the registry,
which imports that table, checks that it has a factory for each."""

BACKEND_NAMES = ("null", "onnxruntime", "sim", "tensorrt", "torch")
