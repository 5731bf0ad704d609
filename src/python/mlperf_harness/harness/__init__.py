"""Scenario-independent harness core: sample stores, batch sources, workers and completion."""
