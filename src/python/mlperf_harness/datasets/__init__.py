"""Datasets: fetch and verify raw data, preprocess to arrays with a manifest, sample stores."""
