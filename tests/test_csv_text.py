"""service/csv_text.py: csv's cell limit raised for a block and put back; its errors in words."""
from __future__ import annotations

import csv
import io

import pytest

from service.csv_text import CELL_LIMIT, long_cells, problem


def test_long_cells_raises_the_limit_for_the_block_and_puts_it_back_after_an_error() -> None:
    before = csv.field_size_limit()
    with pytest.raises(ValueError), long_cells():
        assert csv.field_size_limit() == CELL_LIMIT
        assert next(csv.reader(io.StringIO("x" * 200_000))) == ["x" * 200_000]
        raise ValueError
    assert csv.field_size_limit() == before


def test_an_unclosed_quote_is_said_in_words() -> None:
    with pytest.raises(csv.Error) as raised:
        list(csv.reader(io.StringIO('a,"b\n'), strict=True))
    assert problem(raised.value) == "a quoted cell is not closed: its quote runs to the end of the file"
    assert problem(csv.Error("',' expected after '\"'")) == "',' expected after '\"'"
