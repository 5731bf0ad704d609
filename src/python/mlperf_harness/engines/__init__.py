"""Engines: backend-specific optimized models, addressed by a key of exactly their inputs, cached."""
