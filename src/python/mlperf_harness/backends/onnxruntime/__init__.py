"""The onnxruntime backend: the CPU default that runs everywhere (and in CI)."""
