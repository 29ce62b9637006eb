"""Measuring the served models against people: evaluate, the degenerate-reply check, the synthetic check, the
-minilm report, dev items."""
