"""Reference-free models: the papers' unreferenced parts served alone (parts.py) and the stacked
combination of reference-free signals (combination.py, its signals in signals.py)."""
