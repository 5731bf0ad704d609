"""SQuAD v1.1 for BERT: questions, WordPiece vocabulary, MLPerf's features and their store."""
