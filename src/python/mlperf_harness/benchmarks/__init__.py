"""Benchmarks: per benchmark its model spec, dataset, pre/post-processing, accuracy metric and defaults."""
