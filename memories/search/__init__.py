"""Hybrid search: the vector and lexical legs, their fusion and ranking, folding, and the usage a search records."""
