"""The untrained baselines (bleu4, rouge-l, length, emb-*) and the GloVe table the embedding ones read."""
