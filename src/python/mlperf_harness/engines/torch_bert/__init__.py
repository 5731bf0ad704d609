"""BERT's GPU engine for the torch backend: the encoder in fp16 with fused attention, run per
sequence-length bucket under CUDA graphs (backends/torch_cuda/bert_runner.py)."""
