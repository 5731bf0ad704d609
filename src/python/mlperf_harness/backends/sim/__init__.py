"""The sim backend: simulated GPUs whose batches take a real engine's measured time, asleep."""
