"""MLPerf Inference harness: benchmarks run under the official LoadGen, built and deployed with Pants."""
