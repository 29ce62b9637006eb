"""Measuring the served models against people: evaluate, the degenerate-reply check, the -minilm report, dev items."""
