"""Scores a bot can threshold: each reference-free model's human_percentile table and its checks."""
