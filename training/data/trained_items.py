"""`python -m training trained-items`: each learned model's training keys into its store folder.

What a model read comes from the code its trainer runs (`TRAINED_ON`): the rated items of its sets'
train partition (judgements.load_set's "train"; only items with a reference for a referenced head), and
the judged items (any set or partition) whose last turn and reply are a pair of the unrated dialogues it
or a head it holds was fitted to (`PAIR_STREAMS`). Their keys (service/store/trained_items.py) are
hashed into `trained_items.npy`; the manifest gains `trained_items` and the file's entry in `files`. No
retraining: the split and the streams are functions of the data. Baselines and M_H get none."""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from service.store import trained_items
from service.artifacts.manifest import read_manifest, sha256_file
from training.data import corpora, judgements, negatives

# The sets training/adem/train.py and training/autojudge/train.py read by default (the served heads'
# cards name them); defined here so that this command needs no torch.
ADEM_SETS = ("dstc7", "dailydialog_gupta_multiref")
AUTOJUDGE_SETS = ("xdial_dailydialog_zhao", "xdial_persona_zhao", "conture", "holistic_eval",
                  "predictive_engagement", "dailydialog_gupta_multiref")

Pairs = Iterator[tuple[str, str]]


def _dialogue_pairs(data_dir: Path) -> Pairs:
    """Every (turn, next turn) of the DailyDialog and Chit-Chat train dialogues that hold no dev text: what
    RUBER's GloVe encoders (training/ruber/train.py, one query turn) and the HRED encoder's generative
    pre-training (training/encoders/hred/train.py) read. RUBER skips a reply with no GloVe word: a few more
    keys than it read."""
    dialogues, _ = judgements.dev_holdout(data_dir).unseen(corpora.load_dialogues("train", corpora.SOURCES, data_dir))
    return ((turns[i - 1], turns[i]) for turns in dialogues for i in range(1, len(turns)))


def _next_turn_pairs(data_dir: Path) -> Pairs:
    """The next-turn pre-training pairs of the -minilm heads' M (training/core/next_turn.py)."""
    return zip(*negatives.corpus_pairs())


def _negative_sampling_pairs(data_dir: Path) -> Pairs:
    """(last turn, human reply) of the negative-sampling pairs (negatives.ruber_pairs): RUBER's s_U heads
    rank them, the other heads' margin term reads their human replies, mpnet heads pre-train M on them."""
    return ((pair.context[-1], pair.reply) for pair in negatives.ruber_pairs())


# Unrated pair streams by name; like the sets, read from the default data folder where their code is.
PAIR_STREAMS: dict[str, Callable[[Path], Pairs]] = {
    "dialogues": _dialogue_pairs,
    "next-turn": _next_turn_pairs,
    "negative-sampling": _negative_sampling_pairs,
}
MINILM_HEAD_PAIRS = ("next-turn", "negative-sampling")


@dataclass(frozen=True)
class TrainedOn:
    sets: tuple[str, ...]  # rated items: the train partition of these sets
    with_references: bool  # a referenced head reads only the items that have one
    pairs: tuple[str, ...] = ()  # PAIR_STREAMS it (or a head it holds) read


# The -minilm and unref heads read negatives.judged_rows("train", referenced) over every training set;
# unref-minilm holds autojudge-minilm's and ruber-minilm's heads, unref-mpnet-minilm the latter's, and
# unref-mpnet's own heads pre-train on the negative-sampling pairs (training/unref/heads.py); the
# commercial ones hold no head. ADEM and AutoJudge read through the HRED encoder.
TRAINED_ON: dict[str, TrainedOn] = {
    "adem": TrainedOn(ADEM_SETS, True, ("dialogues",)),
    "autojudge": TrainedOn(AUTOJUDGE_SETS, False, ("dialogues",)),
    "adem-minilm": TrainedOn(judgements.TRAINING_SETS, True, MINILM_HEAD_PAIRS),
    "autojudge-minilm": TrainedOn(judgements.TRAINING_SETS, False, MINILM_HEAD_PAIRS),
    "ruber": TrainedOn((), False, ("dialogues",)),
    "ruber-minilm": TrainedOn((), False, MINILM_HEAD_PAIRS),
    "unref-minilm": TrainedOn(judgements.TRAINING_SETS, False, MINILM_HEAD_PAIRS),
    "unref-mpnet": TrainedOn(judgements.TRAINING_SETS, False, ("negative-sampling",)),
    "unref-mpnet-minilm": TrainedOn(judgements.TRAINING_SETS, False, MINILM_HEAD_PAIRS),
    "unref-minilm-commercial": TrainedOn(judgements.COMMERCIAL_SETS, False),
    "unref-mpnet-commercial": TrainedOn(judgements.COMMERCIAL_SETS, False),
}


def training_items(model: str, data_dir: Path = judgements.DEFAULT_DATA_DIR) -> dict[str, list[judgements.JudgedItem]]:
    """Per set, the judged items `model` was fitted to (sets where it read none are left out)."""
    plan = TRAINED_ON[model]
    out = {}
    for name in plan.sets:
        items = [i for i in judgements.load_set(name, "train", data_dir) if i.references or not plan.with_references]
        if items:
            out[name] = items
    return out


@cache
def stream_keys(name: str, data_dir: Path) -> frozenset[str]:
    """The keys of a PAIR_STREAMS stream, read once per run: most models share the same streams."""
    return frozenset(trained_items.item_key([turn], reply) for turn, reply in PAIR_STREAMS[name](data_dir))


def pair_items(model: str, data_dir: Path = judgements.DEFAULT_DATA_DIR) -> dict[str, list[judgements.JudgedItem]]:
    """Per set, the judged items (every set, either partition) whose last turn and reply are a pair of
    `model`'s PAIR_STREAMS (sets with none are left out)."""
    streams = TRAINED_ON[model].pairs
    if not streams:
        return {}
    read = frozenset().union(*(stream_keys(name, data_dir) for name in streams))
    out = {}
    for name in judgements.SETS:
        items = [i for i in judgements.load_set(name, "all", data_dir) if trained_items.item_key(i.context, i.response) in read]
        if items:
            out[name] = items
    return out


def write(folder: Path, model: str, data_dir: Path = judgements.DEFAULT_DATA_DIR) -> dict:
    """Write `folder`/trained_items.npy and record it in the manifest; returns the manifest's entry."""
    rated, paired = training_items(model, data_dir), pair_items(model, data_dir)
    keys = [trained_items.item_key(i.context, i.response) for found in (rated, paired)
            for set_items in found.values() for i in set_items]
    values = trained_items.hashes(keys)
    path = Path(folder) / trained_items.FILE
    np.save(path, values, allow_pickle=False)
    about = {"file": trained_items.FILE, "unit": trained_items.UNIT, "split": "train",
             "sets": {name: len(v) for name, v in rated.items()},
             "pairs": {"sources": list(TRAINED_ON[model].pairs), "sets": {name: len(v) for name, v in paired.items()}},
             "keys": int(values.size),
             "key": "first 8 bytes (big-endian) of the SHA-256 of the item's last context turn and reply, each "
                    "as letters and digits only, joined by a newline (service/store/trained_items.py item_key)",
             "command": "python -m training trained-items"}
    manifest_path = Path(folder) / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["files"][trained_items.FILE] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    manifest["files"] = dict(sorted(manifest["files"].items()))
    manifest[trained_items.MANIFEST_KEY] = about
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    read_manifest(folder)  # still a manifest the service reads
    return about


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m training trained-items", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--models", nargs="+", default=list(TRAINED_ON), choices=list(TRAINED_ON))
    parser.add_argument("--data-dir", type=Path, default=judgements.DEFAULT_DATA_DIR)
    args = parser.parse_args(argv)
    for model in args.models:
        folder = args.store / model
        if not (folder / "manifest.json").is_file():
            print(f"{model}: not in {args.store}, skipped")
            continue
        about = write(folder, model, args.data_dir)
        print(f"{model}: {sum(about['sets'].values())} rated training items "
              f"({', '.join(f'{k} {v}' for k, v in about['sets'].items())}), "
              f"{sum(about['pairs']['sets'].values())} judged items among its pairs "
              f"({', '.join(f'{k} {v}' for k, v in about['pairs']['sets'].items())}), {about['keys']} keys")
    return 0
