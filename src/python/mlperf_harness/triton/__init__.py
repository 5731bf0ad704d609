"""The Triton Inference Server harness: a benchmark's model served by PyTriton on one or more hosts
(serve.py), and a LoadGen SUT that spreads batches over those servers and survives losing one
(client_sut.py). docs/triton.md says how to run it and what was measured."""
