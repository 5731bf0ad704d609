"""ImageNet 2012 validation: layout checks and the MLPerf reference preprocessing."""
