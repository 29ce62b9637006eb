"""The shared MiniLM sentence encoder (all-MiniLM-L6-v2) and the models trained on its embeddings."""
