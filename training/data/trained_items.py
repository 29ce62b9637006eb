"""`python -m training trained-items`: each learned model's training keys into its store folder.

The judged items a model was fitted to come from the code its trainer runs (`TRAINED_ON`): the train
partition of its sets (judgements.load_set's "train", which leaves out items repeating dev text), only
items with a reference for a referenced head. Their split keys (service/store/trained_items.py) are hashed
into `trained_items.npy` and the manifest gains `trained_items` and the file's entry in `files`. No
retraining: the split is a hash of the data, so the keys are the served model's as long as its card's
sets are. Models fitted to no judged item (baselines, RUBER's negative sampling, M_H) get none."""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from service.store import trained_items
from service.artifacts.manifest import read_manifest, sha256_file
from training.data import judgements

# The sets training/adem/train.py and training/autojudge/train.py read by default (the served heads'
# cards name them); defined here so that this command needs no torch.
ADEM_SETS = ("dstc7", "dailydialog_gupta_multiref")
AUTOJUDGE_SETS = ("xdial_dailydialog_zhao", "xdial_persona_zhao", "conture", "holistic_eval",
                  "predictive_engagement", "dailydialog_gupta_multiref")


@dataclass(frozen=True)
class TrainedOn:
    sets: tuple[str, ...]
    with_references: bool  # a referenced head reads only the items that have one


# The -minilm and unref heads read negatives.judged_rows("train", referenced) over every training set.
TRAINED_ON: dict[str, TrainedOn] = {
    "adem": TrainedOn(ADEM_SETS, True),
    "autojudge": TrainedOn(AUTOJUDGE_SETS, False),
    "adem-minilm": TrainedOn(judgements.TRAINING_SETS, True),
    "autojudge-minilm": TrainedOn(judgements.TRAINING_SETS, False),
    "unref-minilm": TrainedOn(judgements.TRAINING_SETS, False),
    "unref-mpnet": TrainedOn(judgements.TRAINING_SETS, False),
    "unref-mpnet-minilm": TrainedOn(judgements.TRAINING_SETS, False),
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


def write(folder: Path, model: str, data_dir: Path = judgements.DEFAULT_DATA_DIR) -> dict:
    """Write `folder`/trained_items.npy and record it in the manifest; returns the manifest's entry."""
    items = training_items(model, data_dir)
    # The split key itself for the query-keyed sets; for those split by conversation (ConTurE) the same
    # form of the item's last turn, as a scored line can give no conversation id.
    keys = [trained_items.item_key(i.context) for set_items in items.values() for i in set_items]
    values = trained_items.hashes(keys)
    path = Path(folder) / trained_items.FILE
    np.save(path, values, allow_pickle=False)
    about = {"file": trained_items.FILE, "split": "train", "sets": {name: len(v) for name, v in items.items()},
             "keys": int(values.size),
             "key": "first 8 bytes (big-endian) of the SHA-256 of the item's last context turn as training's "
                    "split key ('q:' + its words joined by spaces: service/store/trained_items.py item_key)",
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
        print(f"{model}: {sum(about['sets'].values())} training items, {about['keys']} keys "
              f"({', '.join(f'{k} {v}' for k, v in about['sets'].items())})")
    return 0
