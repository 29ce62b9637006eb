"""Readers for the real data in ../shared/data (never copied into the repository)."""
