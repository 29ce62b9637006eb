"""ADEM (Lowe et al. 2017), on the VHRED encoder as the paper has it (hred.py) and on MiniLM (minilm.py)."""
