"""Which lines a learned model was trained on: its training items' keys, shipped beside it.

An item's key is its last context turn and its reply by the loose `service.text.match_key`, the unit
every learned model here reads (rated items; RUBER's and the next-turn pre-training's (turn, next turn)
pairs). So one reply to one turn is one key however a source spells it ("did n't", "didn't"), a generic
turn ("what is it ?") flags only the reply read after it, and a training item under other earlier turns
is still flagged. A model folder ships the keys' sorted 8-byte hashes (`trained_items.npy`, listed in
the manifest's `files` with its sha256); the manifest's `trained_items` says what they come from and
their `unit`.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from service.artifacts.manifest import Manifest, ManifestError, read_manifest, sha256_file
from service.text import match_key

FILE = "trained_items.npy"
MANIFEST_KEY = "trained_items"
# The manifest's `trained_items.unit` for keys of this form; keys of another form cannot be matched.
UNIT = "last context turn and reply, by service.text.match_key"
# A speaker tag: up to three capitalised words or numbers ("A", "User", "Speaker 1", "Person B"), or a
# lower-cased role; not any phrase before a colon ("the answer is: no" keeps its words).
_NAME = r"(?:[A-Z][\w'-]{0,15}|\d{1,3})"
_ROLE = r"(?:user|bot|system|human|assistant|agent|speaker|person|model|customer|wizard|apprentice|a|b)(?: ?\d{1,3})?"
SPEAKER_TAG = re.compile(rf"^\s*(?:{_NAME}(?: {_NAME}){{0,2}}|{_ROLE}) ?:\s+")


def item_key(context: Sequence[str], response: str) -> str:
    """A line's key: the match keys of its last context turn and of its reply, joined by a newline
    (which neither holds)."""
    return match_key(context[-1] if context else "") + "\n" + match_key(response)


def untagged(turn: str) -> str:
    """The turn without a leading speaker tag (SPEAKER_TAG) and the space after its colon ("B: ", "Speaker 1: ")."""
    return SPEAKER_TAG.sub("", turn, count=1)


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

    def holds(self, context: Sequence[str], response: str) -> bool:
        """Whether a line with this context and reply is one of the model's training items, its turns as
        given or without a leading speaker tag ("A: ", "User: "), which no training source has."""
        if not self.hashes.size:
            return False
        last = context[-1] if context else ""
        keys = {item_key([turn], reply) for turn in (last, untagged(last)) for reply in (response, untagged(response))}
        values = np.array([key_hash(key) for key in keys], dtype=np.uint64)
        at = np.minimum(np.searchsorted(self.hashes, values), self.hashes.size - 1)
        return bool(np.any(self.hashes[at] == values))


def load(folder: Path) -> TrainedItems | None:
    """The keys a model folder ships (checked against the manifest's sha256), or None where its manifest
    names none: a model that read no judged item (a baseline, M_H's dialogues)."""
    return of_manifest(read_manifest(folder))


def of_manifest(manifest: Manifest) -> TrainedItems | None:
    """load() for a manifest already read."""
    about = manifest.trained_items
    if not about:
        return None
    if about.get("file") != FILE or FILE not in manifest.files:
        raise ManifestError(f"{manifest.name}: trained_items must name {FILE}, listed in files",
                            "manifest invalid: trained_items")
    if about.get("unit") != UNIT:
        raise ManifestError(f"{manifest.name}: {FILE} holds keys of another form than this service's "
                            f"({UNIT}): rerun `python -m training trained-items`", "manifest invalid: trained_items")
    if sha256_file(manifest.path(FILE)) != manifest.files[FILE]["sha256"]:
        raise ManifestError(f"{manifest.name}: {FILE} does not have the manifest's sha256", f"hash mismatch in {FILE}")
    values = np.load(manifest.path(FILE), allow_pickle=False)
    if values.dtype != np.uint64 or values.ndim != 1 or np.any(values[1:] <= values[:-1]):
        raise ManifestError(f"{manifest.name}: {FILE} must be a sorted 1-d uint64 array of distinct hashes",
                            "manifest invalid: trained_items")
    return TrainedItems(manifest.name, values, about)
