"""Encoders trained here (the VHRED hierarchical encoder) and their export-friendly building blocks."""
