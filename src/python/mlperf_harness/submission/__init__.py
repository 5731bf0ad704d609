"""A submission: audit runs and their verification, staging, truncation, the system description,
the preflight check and packing, for MLCommons' current round (v6.1) or an earlier one, each round
one table of facts in rounds/."""
