"""Reference-free models: the stacked combination of reference-free signals (combination.py, its
signals in signals.py). The papers' own reference-free parts (RUBER's s_U) are options of their
models (`options.reference_free`, scorers/base.py), not models of their own."""
