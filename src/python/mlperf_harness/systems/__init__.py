"""Detection of the machine a benchmark runs on: CPU, memory, GPUs."""
