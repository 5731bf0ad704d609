"""GPT-J's GPU engine for the torch backend: the decoder in fp16 with a KV cache of slots whose
prompt keys and values are stored once per sample and shared by its beams, the decode step of all
rows under a CUDA graph, and beam scoring on the GPU (generation/engine.py's DecoderEngine)."""
