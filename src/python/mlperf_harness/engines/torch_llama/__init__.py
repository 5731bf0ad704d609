"""Llama 2 in torch on GPUs: FP8 weights, a KV cache in slots, grouped-query attention, tensor parallelism."""
