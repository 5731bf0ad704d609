"""Torch engines for CUDA GPUs: ONNX -> torch module (our own converter) -> AOTInductor package.

Only `torch_module` imports torch at module level; everything else here (the op table, graph
rewrites, engine specs and keys) works without it, so CPU hosts and CI can import and test it.
"""
