"""ADEM (Lowe et al. 2017): its head on the VHRED encoder (adem) and on MiniLM (adem-minilm), training, export, cards."""
