"""Inference backends behind one runner protocol; each backend in its own subpackage, imported on demand."""
