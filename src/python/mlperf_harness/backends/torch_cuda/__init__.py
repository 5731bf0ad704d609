"""The torch backend: runs AOTInductor engines (engines/torch_aot) on a CUDA GPU."""
