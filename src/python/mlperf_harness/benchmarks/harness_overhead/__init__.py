"""A benchmark with no model and no data: measures what the harness and LoadGen cost per sample."""
