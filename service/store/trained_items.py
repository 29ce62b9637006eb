"""Which lines a learned model was trained on: the keys of its training items, shipped beside it.

An item's key is training's split key (training/data/judgements.py `query_key` calls `item_key`): its
last context turn, lower-cased and split into words. Every reply to one context shares one split, so a
line whose key a model holds is one of its training items (or another reply to a context it was trained
on), and its score there is no held-out figure. A model folder ships the keys as a sorted array of the
keys' 8-byte hashes (`trained_items.npy`, listed in the manifest's `files` with its sha256) and says in
the manifest's `trained_items` which sets and partition they come from.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from service.artifacts.manifest import ManifestError, read_manifest, sha256_file
from service.text import words

FILE = "trained_items.npy"
MANIFEST_KEY = "trained_items"


def item_key(context: Sequence[str]) -> str:
    """The split key of a context: "q:" and its last turn's words joined by spaces."""
    return "q:" + " ".join(words(context[-1] if context else ""))


def key_hash(key: str) -> int:
    """The first 8 bytes of the key's SHA-256 as an unsigned integer (what the file holds)."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def hashes(keys: Iterable[str]) -> np.ndarray:
    """The sorted, distinct hashes of `keys`, as written to FILE."""
    return np.unique(np.array([key_hash(k) for k in keys], dtype=np.uint64))


@dataclass(frozen=True)
class TrainedItems:
    """One model's training keys, and what its manifest says they are."""

    model: str
    hashes: np.ndarray  # sorted uint64
    about: dict[str, Any]

    def holds(self, context: Sequence[str]) -> bool:
        """Whether a line with this context is one of the model's training items."""
        if not self.hashes.size:
            return False
        value = np.uint64(key_hash(item_key(context)))
        at = int(np.searchsorted(self.hashes, value))
        return at < self.hashes.size and self.hashes[at] == value


def load(folder: Path) -> TrainedItems | None:
    """The keys a model folder ships (checked against the manifest's sha256), or None where its manifest
    names none: a model fitted to no judged item (a baseline, RUBER's negative sampling, M_H's dialogues)."""
    manifest = read_manifest(folder)
    about = manifest.trained_items
    if not about:
        return None
    if about.get("file") != FILE or FILE not in manifest.files:
        raise ManifestError(f"{manifest.name}: trained_items must name {FILE}, listed in files",
                            "manifest invalid: trained_items")
    if sha256_file(manifest.path(FILE)) != manifest.files[FILE]["sha256"]:
        raise ManifestError(f"{manifest.name}: {FILE} does not have the manifest's sha256", f"hash mismatch in {FILE}")
    values = np.load(manifest.path(FILE), allow_pickle=False)
    if values.dtype != np.uint64 or values.ndim != 1 or np.any(values[1:] <= values[:-1]):
        raise ManifestError(f"{manifest.name}: {FILE} must be a sorted 1-d uint64 array of distinct hashes",
                            "manifest invalid: trained_items")
    return TrainedItems(manifest.name, values, about)
