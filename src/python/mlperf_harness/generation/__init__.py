"""Generation under LoadGen: the decoder-engine interface, beam search over it, and the serving
loop (in-flight batching) that answers LoadGen with generated tokens."""
