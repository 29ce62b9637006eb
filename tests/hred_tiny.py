"""A tiny VHRED + ADEM + AutoJudge trained on tiny real data in seconds, shared by the tests of
training/ and of the service scorers (the whole chain: train, export, load, score)."""
from __future__ import annotations

import json
from pathlib import Path

TINY = {"embedding": 16, "utterance": 12, "context": 24, "latent": 6, "decoder": 24, "max_tokens": 24,
        "max_turns": 5}
TINY_SETS = "dailydialog_gupta_multiref"


def pretrain_tiny(out: Path) -> Path:
    from training.encoders.hred import train as pretrain

    assert pretrain.main(["--out", str(out), "--steps", "12", "--max-dialogues", "120", "--eval-dialogues",
                          "10", "--vocab-size", "300", "--sources", "dailydialog", "--batch-size", "8",
                          "--kl-anneal-steps", "6", "--config", json.dumps(TINY)]) == 0
    return out


def train_heads_tiny(vhred: Path, root: Path) -> tuple[Path, Path]:
    from training.adem import train as adem_train
    from training.autojudge import train as autojudge_train

    adem, autojudge = root / "adem-run", root / "autojudge-run"
    assert adem_train.main(["--encoder", str(vhred), "--out", str(adem), "--sets", TINY_SETS, "--epochs", "3",
                            "--patience", "2", "--store", str(root / "no-store")]) == 0
    assert autojudge_train.main(["--encoder", str(vhred), "--out", str(autojudge), "--sets", TINY_SETS,
                                 "--system-sets", TINY_SETS, "--epochs", "3", "--patience", "2",
                                 "--folds", "2"]) == 0
    return adem, autojudge


def tiny_store(root: Path) -> Path:
    """root/store holding hred-encoder, adem and autojudge exported from tiny runs."""
    from training import export

    vhred = pretrain_tiny(root / "vhred")
    adem, autojudge = train_heads_tiny(vhred, root)
    store = root / "store"
    assert export.main(["--vhred", str(vhred), "--adem", str(adem), "--autojudge", str(autojudge),
                        "--store", str(store)]) == 0
    return store
