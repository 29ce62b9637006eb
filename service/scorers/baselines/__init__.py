"""The untrained baselines every learned metric must beat: word overlap, GloVe embeddings, reply length,
and the MiniLM cosine."""
