"""BERT on SQuAD v1.1: the embedded stand-in model and its generated data."""
