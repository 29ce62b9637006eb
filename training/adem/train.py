"""`python -m training train adem`: ADEM, C-ADEM and R-ADEM on the human-scored sets with references.

Fits on the `train` partition of each set (training/data/judgements.py), early-stops on a
held-out 15% of training *contexts* (no context shared with the fitting items, paper 5.1) and
reports on each set's `dev` partition, next to BLEU-4, length and "VHRED" (ADEM at
initialisation, paper Table 3). Hyperparameters as the paper's best: n = 7, gamma = 0.02,
lr = 0.01, batch 16. Writes head.pt and metrics.json to --out; `export` turns them into
model_store/adem.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from training.adem.model import ADEMHead, ServedADEM, VARIANTS, fit_pca
from training.hred.model import save_atomically
from training.core.heads import (calibrate_head, clear_head_outputs, context_groups, correlations, encoder_record, predict,
                            system_correlation, train_head, validation_mask)
from training.core.progress import setup_logging
from training.data.judgements import SETS
from training.core.cli import SetupError, count, names_from, nonnegative_float, positive_float, positive_int

DEFAULT_SETS = ("dstc7", "dailydialog_gupta_multiref")


def load_items(sets: tuple[str, ...], split: str, data_dir: Path | None = None) -> list:
    """Judged items with at least one reference (the first is ADEM's r)."""
    from training.data import judgements

    kwargs = {"data_dir": data_dir} if data_dir else {}
    return [item for name in sets for item in judgements.load_set(name, split, **kwargs) if item.references]


def encode_items(encoder, items: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, r_hat, r) vectors: context, model response, first reference."""
    return (encoder.encode_contexts([i.context for i in items]),
            encoder.encode_responses([i.response for i in items]),
            encoder.encode_responses([i.references[0] for i in items]))


def fit_adem(train: tuple[np.ndarray, ...], human: np.ndarray, groups: list[str], *, variant: str = "adem",
             n: int = 7, gamma: float = 0.02, lr: float = 0.01, batch_size: int = 16, epochs: int = 50,
             patience: int = 5, seed: int = 0, valid_fraction: float = 0.15, log=None) -> tuple[ADEMHead, dict]:
    """PCA on the fitting vectors, alpha/beta calibrated at M = N = I, then Adam with early stopping.

    `train` is (c, r_hat, r) arrays; `groups` the context of each item (the validation split
    takes whole contexts).
    """
    held = validation_mask(groups, valid_fraction, f"adem-valid-{seed}")
    fit = ~held
    mean, components = fit_pca(np.concatenate([x[fit] for x in train]), n)
    head = ADEMHead(mean, components, variant)
    alpha, beta = calibrate_head(head, tuple(x[fit] for x in train), human[fit])
    history = train_head(head, tuple(x[fit] for x in train), human[fit], tuple(x[held] for x in train),
                         human[held], lr=lr, batch_size=batch_size, epochs=epochs, patience=patience,
                         seed=seed, reduction="sum", l1=gamma, log=log)
    history.update({"alpha": alpha, "beta": beta, "fit_items": int(fit.sum()), "valid_items": int(held.sum()),
                    "n": n, "gamma": gamma, "lr": lr, "batch_size": batch_size, "variant": variant})
    return head, history


def baseline_scores(items: list, store: Path) -> dict[str, np.ndarray]:
    """The served bleu4 and length baselines (model_store), for the card's comparison."""
    from service.manifest import read_manifest
    from service.runtime import Runtime
    from service.scorers.base import Item
    from service.scorers.registry import scorer_class

    out = {}
    for name in ("bleu4", "rouge-l", "length"):
        folder = Path(store) / name
        if not (folder / "manifest.json").is_file():
            continue
        manifest = read_manifest(folder)
        scorer = scorer_class(manifest.scorer)(manifest, {}, Runtime())
        batch = [Item(i.context, i.response, i.references[0]) for i in items]
        out[name] = np.asarray(scorer.score(batch).scores)
    return out


def main(argv: list[str]) -> int:
    from training.hred.encoder import HREDTextEncoder

    parser = argparse.ArgumentParser(prog="python -m training train adem", description=__doc__)
    parser.add_argument("--encoder", type=Path, default=Path("runs/vhred"), help="pre-training run folder")
    parser.add_argument("--out", type=Path, default=Path("runs/adem"))
    parser.add_argument("--sets", type=names_from(tuple(SETS)), default=",".join(DEFAULT_SETS))
    parser.add_argument("--n", type=positive_int, default=7)
    parser.add_argument("--gamma", type=nonnegative_float, default=0.02)
    parser.add_argument("--lr", type=positive_float, default=0.01)
    parser.add_argument("--batch-size", type=positive_int, default=16)
    parser.add_argument("--epochs", type=positive_int, default=50)
    parser.add_argument("--patience", type=positive_int, default=5)
    parser.add_argument("--seed", type=count, default=0)
    parser.add_argument("--max-items", type=count, default=0, help="cap per split (tests); 0: all")
    parser.add_argument("--store", type=Path, default=Path("model_store"), help="for the baselines")
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.store.exists() and not args.store.is_dir():  # it dropped the card's baselines without a word
        parser.error(f"argument --store: {args.store} is a file; name the model store whose baselines the card "
                     "compares with")
    args.out.mkdir(parents=True, exist_ok=True)
    log = setup_logging(args.out / "train.log")
    torch.set_num_threads(1)
    started = time.time()
    sets = tuple(s for s in args.sets.split(",") if s)

    train_items = load_items(sets, "train", args.data_dir)
    dev_items = load_items(sets, "dev", args.data_dir)
    if args.max_items:
        train_items, dev_items = train_items[:args.max_items], dev_items[:args.max_items]
    log.info("ADEM on %s: %d train items, %d dev items (with references)", ",".join(sets),
             len(train_items), len(dev_items))
    if not train_items:
        raise SetupError(f"--sets {args.sets}: no train item has a reference, which ADEM needs (sets with "
                         "references: dstc7, dailydialog_gupta_multiref)")
    encoder = HREDTextEncoder.from_run(args.encoder)
    t0 = time.time()
    train_vectors = encode_items(encoder, train_items)
    dev_vectors = encode_items(encoder, dev_items)
    if args.n > train_vectors[0].shape[1]:
        raise SetupError(f"--n {args.n}: PCA cannot keep more dimensions than the encoder's "
                         f"{train_vectors[0].shape[1]}")
    clear_head_outputs(args.out)
    log.info("encoded %d items in %.0fs", len(train_items) + len(dev_items), time.time() - t0)
    human = np.array([i.score for i in train_items], dtype=np.float32)
    dev_human = np.array([i.score for i in dev_items], dtype=np.float32)
    groups = context_groups(train_items)  # whole contexts to early stopping's validation part (paper 5.1)

    heads, histories, report = {}, {}, {}
    for variant in VARIANTS:
        log.info("fitting %s", variant)
        head, history = fit_adem(train_vectors, human, groups, variant=variant, n=args.n, gamma=args.gamma,
                                 lr=args.lr, batch_size=args.batch_size, epochs=args.epochs,
                                 patience=args.patience, seed=args.seed, log=log)
        heads[variant], histories[variant] = head, history
    # "VHRED": the dot products at initialisation (M = N = I), as in Table 3.
    init = ADEMHead(heads["adem"].mean.numpy(), heads["adem"].components.numpy(), "adem",
                    histories["adem"]["alpha"], histories["adem"]["beta"])
    baselines = baseline_scores(dev_items, args.store)
    if not baselines:
        log.warning("no bleu4, rouge-l or length in %s: the card compares with no baseline", args.store)
    for name in sets:
        index = [k for k, i in enumerate(dev_items) if i.set == name]
        if not index:
            continue
        subset = tuple(x[index] for x in dev_vectors)
        systems = [dev_items[k].system for k in index]
        rows = {}
        for variant, head in [*heads.items(), ("vhred (init)", init)]:
            predicted = predict(head, subset)
            rows[variant] = {"item": correlations(predicted, dev_human[index]),
                             "system": system_correlation(predicted, dev_human[index], systems)}
        for baseline, scores in baselines.items():
            rows[baseline] = {"item": correlations(scores[index], dev_human[index]),
                              "system": system_correlation(scores[index], dev_human[index], systems)}
        report[name] = rows
        log.info("dev %s (%d items): %s", name, len(index),
                 {k: v["item"]["pearson"] for k, v in rows.items()})

    payload = {v: {"state": h.state_dict(), "variant": v} for v, h in heads.items()}
    save_atomically(payload, args.out / "head.pt")
    metrics = {"sets": list(sets), "train_items": len(train_items), "dev_items": len(dev_items),
               "training": {v: {k: x for k, x in h.items() if k != "history"} | {"epochs_run": len(h["history"]) - 1}
                            for v, h in histories.items()},
               "dev": report, "seed": args.seed, "minutes": round((time.time() - started) / 60, 1),
               **encoder_record(args.encoder)}
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    log.info("wrote %s in %.1f min", args.out, metrics["minutes"])
    return 0


def load_run(folder: Path) -> tuple[dict[str, ADEMHead], dict]:
    payload = torch.load(Path(folder) / "head.pt", map_location="cpu", weights_only=True)
    heads = {}
    for variant, entry in payload.items():
        state = entry["state"]
        head = ADEMHead(state["mean"].numpy(), state["components"].numpy(), variant)
        head.load_state_dict(state)
        heads[variant] = head.eval()
    return heads, json.loads((Path(folder) / "metrics.json").read_text())


def export_run(run: Path, folder: Path, version: str, encoder_name: str = "hred-encoder") -> dict[str, float]:
    """model_store/adem: adem_head.onnx (c, r_hat, r -> score), manifest and card."""
    from service.manifest import write_manifest
    from training import cards
    from training.core.onnx_export import export_head

    heads, metrics = load_run(run)
    head = heads["adem"]
    dim = head.mean.shape[0]

    def write(target: Path, parity: dict[str, float]) -> None:
        config = {"head": "adem_head.onnx", "encoder": encoder_name, "n": int(head.components.shape[0]),
                  "alpha": float(head.alpha), "beta": float(head.beta), "parity_max_abs_diff": parity}
        write_manifest(target, name=target.name, version=version, kind="referenced", scorer="adem",
                       score_range=(1.0, 5.0), uses=[encoder_name], config=config,
                       card=cards.adem_card(metrics))
        cards.write_readme(target, cards.adem_readme(target, metrics, parity,
                                                         dim, cards.context_turns(target.parent / encoder_name)))

    served = ServedADEM(head)
    return export_head(served, 3, ["c", "r_hat", "r"], folder, "adem_head.onnx", dim, write,
                       outputs=ServedADEM.OUTPUTS, scales=served.scales())
