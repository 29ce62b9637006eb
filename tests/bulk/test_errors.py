"""`service.bulk.errors`: an I/O error at set-up exits 1 (retried) only where a retry may pass, else 2."""
from __future__ import annotations

import errno
import os
import signal

import pytest

from service import bulk
from service.store.model_store import ModelStore
from tests.bulk.conftest import GOOD, encoded, write_lines


@pytest.mark.parametrize("where", ["output", "model store"])
@pytest.mark.parametrize(("error", "status"), [(errno.EIO, 1), (errno.ESTALE, 1), (errno.EACCES, 2)])
def test_an_io_error_at_set_up_is_retried_only_when_it_may_pass(store_root, tmp_path, monkeypatch, error, status,
                                                                 where):
    """A volume that blinks while the resume point or the model store is read (EIO, ESTALE) exits 1,
    which the Job retries; one that refuses (EACCES) exits 2 like any set-up error. The volume is
    what is faked here."""
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))

    def failing_volume(*args, **kwargs):
        raise OSError(error, os.strerror(error))

    if where == "output":
        monkeypatch.setattr(bulk.runner, "resume_point", failing_volume)
    else:
        monkeypatch.setattr(ModelStore, "load", failing_volume)
    monkeypatch.setenv("DIALSCORE_MODEL_STORE", str(store_root))
    monkeypatch.setenv("DIALSCORE_INTRA_OP_THREADS", "1")
    try:
        assert bulk.main(["--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl")]) == status
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    assert not (tmp_path / "o.jsonl").exists() or (tmp_path / "o.jsonl").read_bytes() == b""
