"""RUBER (Tao et al. 2018): on GloVe and BiGRUs as the paper has it (glove.py), on MiniLM (minilm.py); the
normalisation and blends both use (blending.py)."""
