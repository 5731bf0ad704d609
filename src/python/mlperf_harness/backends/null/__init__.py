"""The null backend: no model and no compute, to measure the harness itself."""
