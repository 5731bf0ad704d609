"""OpenOrca as MLCommons\x27 Llama2-70B benchmark uses it, and a generated stand-in."""
