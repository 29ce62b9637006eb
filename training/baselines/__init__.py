"""The untrained baselines (bleu4, rouge-l, length, emb-*, minilm-cosine) and the GloVe table the embedding ones read."""
