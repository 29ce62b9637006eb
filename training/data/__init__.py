"""Readers for the real data in ../shared/data (never copied into the repository), and the negative samples and
degenerate replies built from it."""
