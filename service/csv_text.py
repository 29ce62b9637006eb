"""CSV as both command lines read it (`dialscore score`, the analysis importers): cells as long as the file
holds them, and csv's errors in words."""
from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import contextmanager

# A cell as long as a JSON line may be (no bound but the file's): csv's default, 131,072 characters, stopped
# a whole file at one long reply, which the models read the first tokens of, as from JSON lines.
CELL_LIMIT = 2**31 - 1


@contextmanager
def long_cells() -> Iterator[None]:
    """csv's cell limit raised to CELL_LIMIT for the block, then put back (it is the process's own)."""
    previous = csv.field_size_limit(CELL_LIMIT)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def problem(exc: Exception) -> str:
    """What is wrong with a row, in words."""
    if str(exc) == "unexpected end of data":
        return "a quoted cell is not closed: its quote runs to the end of the file"
    return str(exc)
