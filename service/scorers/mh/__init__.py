"""M_H (Ghandeharioun et al. 2019): the conversation proxies (proxies.py) and the regression over them (scorer.py)."""
