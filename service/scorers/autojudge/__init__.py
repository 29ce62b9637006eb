"""AutoJudge (Deriu & Cieliebak 2019), on the VHRED encoder (hred.py) and on MiniLM (minilm.py)."""
