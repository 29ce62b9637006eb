"""The reference-free models: the papers' unreferenced parts as models of their own (parts.py), and the
stacked combination of reference-free signals (`python -m training train-unref`: recipes, out-of-fold
heads, the fit and its leave-one-set-out choice, export, card)."""
