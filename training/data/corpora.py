"""Unlabelled dialogue corpora: DailyDialog (its official splits) and the BYU Chit-Chat dataset (a seeded
90/5/5 split by conversation id, the same on every machine) for pre-training; Topical-Chat's valid splits,
which no training stream reads, and the other held-aside dialogues the synthetic check draws from."""
from __future__ import annotations

import hashlib
import json
import os
import random
from functools import lru_cache
from pathlib import Path

SPLITS = ("train", "validation", "test")
SOURCES = ("dailydialog", "chitchat")
TOPICALCHAT_FILES = ("valid_freq.json", "valid_rare.json")  # the Topical-Chat splits in the data folder
CHITCHAT_SEED = 20261122
CHITCHAT_FRACTIONS = (0.90, 0.05, 0.05)


def _default_data_dir() -> Path:
    env = os.environ.get("DIALSCORE_DATA_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


DEFAULT_DATA_DIR = _default_data_dir()


def _clean(text: str) -> str:
    return " ".join(text.split())


def dailydialog(split: str, data_dir: Path = DEFAULT_DATA_DIR) -> list[list[str]]:
    """DailyDialog dialogues of one official split; one line per dialogue, turns end in __eou__."""
    path = Path(data_dir) / "corpora" / "dailydialog" / split / f"dialogues_{split}.txt"
    dialogues: list[list[str]] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            turns = [_clean(t) for t in line.split("__eou__")]
            turns = [t for t in turns if t]
            if turns:
                dialogues.append(turns)
    return dialogues


@lru_cache(maxsize=1)
def _chitchat_all() -> dict[str, list[str]]:
    import chitchat_dataset  # the installed package holds dataset.json

    with open(chitchat_dataset._PATH, encoding="utf-8") as handle:
        raw = json.load(handle)
    conversations: dict[str, list[str]] = {}
    seen: set[tuple[str, ...]] = set()
    for key in sorted(raw):
        conversation = raw[key]
        # A "message" is a run of lines by one sender: one turn.
        turns = [_clean(" ".join(line["text"] for line in message)) for message in conversation["messages"]]
        turns = [t for t in turns if t]
        # Some conversations appear twice under different ids: keep one, or it could sit in
        # train and validation at once.
        if len(turns) >= 2 and tuple(turns) not in seen:
            seen.add(tuple(turns))
            conversations[key] = turns
    return conversations


def chitchat_split_of(keys: list[str], seed: int = CHITCHAT_SEED) -> dict[str, str]:
    """Conversation id -> split, by a seeded shuffle of the sorted ids (90/5/5)."""
    order = sorted(keys)
    random.Random(seed).shuffle(order)
    n_train = int(round(len(order) * CHITCHAT_FRACTIONS[0]))
    n_valid = int(round(len(order) * CHITCHAT_FRACTIONS[1]))
    result: dict[str, str] = {}
    for index, key in enumerate(order):
        result[key] = "train" if index < n_train else "validation" if index < n_train + n_valid else "test"
    return result


def chitchat(split: str) -> list[list[str]]:
    """Chit-Chat conversations of one split (seeded 90/5/5 by conversation), in sorted id order."""
    conversations = _chitchat_all()
    assignment = chitchat_split_of(list(conversations))
    return [conversations[k] for k in sorted(conversations) if assignment[k] == split]


def load_dialogues(split: str, sources: tuple[str, ...] = SOURCES,
                   data_dir: Path = DEFAULT_DATA_DIR) -> list[list[str]]:
    """Dialogues (lists of turns, oldest first) of `split` from the named sources, in a fixed order."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    unknown = set(sources) - set(SOURCES)
    if unknown:
        raise ValueError(f"unknown corpus source(s) {sorted(unknown)}; known: {SOURCES}")
    dialogues: list[list[str]] = []
    for source in sources:
        dialogues.extend(dailydialog(split, data_dir) if source == "dailydialog" else chitchat(split))
    return dialogues


def fingerprint(dialogues: list[list[str]]) -> str:
    """A short hash of a dialogue list, for logs and model cards (which data was used)."""
    digest = hashlib.sha256()
    for dialogue in dialogues:
        digest.update("\x1e".join(dialogue).encode("utf-8") + b"\x1d")
    return digest.hexdigest()[:16]


def topicalchat(data_dir: Path = DEFAULT_DATA_DIR, min_turns: int = 4) -> list[list[str]]:
    """Topical-Chat's valid conversations (both files, ids sorted) as turns, empty turns left out; those
    with `min_turns` turns or more."""
    dialogues: list[list[str]] = []
    for name in TOPICALCHAT_FILES:
        with open(Path(data_dir) / "corpora" / "topicalchat" / name, encoding="utf-8") as handle:
            conversations = json.load(handle)
        for key in sorted(conversations):
            turns = [t for t in (_clean(turn["message"]) for turn in conversations[key]["content"]) if t]
            if len(turns) >= min_turns:
                dialogues.append(turns)
    return dialogues


def held_aside(data_dir: Path = DEFAULT_DATA_DIR) -> dict[str, list[list[str]]]:
    """Dialogues no training stream fits to, by source: DailyDialog validation and test (on validation VHRED
    reports its perplexity and RUBER's s_U picks its best step), Chit-Chat's test split, Topical-Chat's valid
    splits. DailyDialog's sentences recur across its splits: a user keeps its dev-partition queries only."""
    return {"dailydialog": dailydialog("validation", data_dir) + dailydialog("test", data_dir),
            "chitchat": chitchat("test"), "topicalchat": topicalchat(data_dir)}
