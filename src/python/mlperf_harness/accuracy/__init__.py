"""Accuracy metrics computed from LoadGen's mlperf_log_accuracy.json."""
