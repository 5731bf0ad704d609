"""A submission: audit runs and their verification, staging, truncation, the system description,
the preflight check and packing, for MLCommons' current round (see rules.py)."""
