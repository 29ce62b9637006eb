"""The tool's version, one place: pyproject.toml reads it (setuptools' `attr:`), CITATION.cff repeats it
(tests/test_citation.py), and the commands print it, so a source checkout and an installed package say
the same. YEAR.MONTH.N; it moves when the code or the HTTP contract's additions change (docs/citing.md)."""
from __future__ import annotations

VERSION = "2026.11.1"
TOOL = "dialscore"  # the key under which a result (report or /correlate, /human-eval answer) names VERSION
