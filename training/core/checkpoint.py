"""Torch files of a run (checkpoints, heads) written whole: the old file or the new one, never half of one."""
from __future__ import annotations

import io
import os
from pathlib import Path

import torch


def save_atomically(payload: dict, path) -> None:
    """torch.save to a temporary name, then os.replace: the old file or the new one, never half of one.
    Through a buffer: saved to a path, torch names the archive inside after the file, and the
    temporary name (with its pid) would make every save's bytes differ."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    partial.write_bytes(buffer.getvalue())
    os.replace(partial, path)
