"""`python -m training train adem`: ADEM, C-ADEM and R-ADEM on the human-scored sets with references.

Fits on each set's `train` partition, early-stops on held-out training *contexts* (paper 5.1) and
reports each set's `dev` partition; writes head.pt and metrics.json to --out for `export`."""
from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np
import torch

from service.artifacts.manifest import read_manifest
from service.artifacts.runtime import Runtime
from service.scorers.base import Item
from service.store.registry import scorer_class
from training.adem.model import VARIANTS, AdemHead, fit_pca
from training.core.cli import SetupError, nonnegative_float, positive_int
from training.core.heads import (add_head_options, calibrate_head, clear_head_outputs, context_groups, dev_report, encoder_record,
                                 load_judged, save_run, train_head, validation_mask)
from training.core.progress import setup_logging
from training.data.trained_items import ADEM_SETS
from training.encoders.hred.encoder import HREDTextEncoder

DEFAULT_SETS = ADEM_SETS  # the served head's, whose training keys the store ships


def encode_items(encoder: HREDTextEncoder, items: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, r_hat, r) vectors: context, model response, first reference."""
    return (encoder.encode_contexts([i.context for i in items]),
            encoder.encode_responses([i.response for i in items]),
            encoder.encode_responses([i.references[0] for i in items]))


def fit_adem(train: tuple[np.ndarray, ...], human: np.ndarray, groups: list[str], *, variant: str = "adem",
             n: int = 7, gamma: float = 0.02, lr: float = 0.01, batch_size: int = 16, epochs: int = 50,
             patience: int = 5, seed: int = 0, valid_fraction: float = 0.15,
             log: logging.Logger | None = None) -> tuple[AdemHead, dict]:
    """PCA on the fitting vectors, alpha/beta calibrated at M = N = I, then Adam with early stopping.

    `train` is (c, r_hat, r) arrays; `groups` the context of each item (the validation split
    takes whole contexts).
    """
    held = validation_mask(groups, valid_fraction, f"adem-valid-{seed}")
    fit = ~held
    mean, components = fit_pca(np.concatenate([x[fit] for x in train]), n)
    head = AdemHead(mean, components, variant)
    alpha, beta = calibrate_head(head, tuple(x[fit] for x in train), human[fit])
    history = train_head(head, tuple(x[fit] for x in train), human[fit], tuple(x[held] for x in train),
                         human[held], lr=lr, batch_size=batch_size, epochs=epochs, patience=patience,
                         seed=seed, reduction="sum", l1=gamma, log=log)
    history.update({"alpha": alpha, "beta": beta, "fit_items": int(fit.sum()), "valid_items": int(held.sum()),
                    "n": n, "gamma": gamma, "lr": lr, "batch_size": batch_size, "variant": variant})
    return head, history


def baseline_scores(items: list, store: Path) -> dict[str, np.ndarray]:
    """The served bleu4, rouge-l and length baselines (model_store), for the card's comparison."""
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
    parser = argparse.ArgumentParser(prog="python -m training train adem", description=__doc__)
    add_head_options(parser, "runs/adem", DEFAULT_SETS, lr=0.01, batch_size=16, epochs=50, patience=5)
    parser.add_argument("--n", type=positive_int, default=7)
    parser.add_argument("--gamma", type=nonnegative_float, default=0.02)
    parser.add_argument("--store", type=Path, default=Path("model_store"), help="for the baselines")
    args = parser.parse_args(argv)
    if args.store.exists() and not args.store.is_dir():  # a file would silently drop the card's baselines
        parser.error(f"argument --store: {args.store} is a file; name the model store whose baselines the card "
                     "compares with")
    args.out.mkdir(parents=True, exist_ok=True)
    log = setup_logging(args.out / "train.log")
    torch.set_num_threads(1)
    started = time.time()
    sets = tuple(s for s in args.sets.split(",") if s)

    train_items = load_judged(sets, "train", args.data_dir, with_references=True)
    dev_items = load_judged(sets, "dev", args.data_dir, with_references=True)
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

    heads, histories = {}, {}
    for variant in VARIANTS:
        log.info("fitting %s", variant)
        heads[variant], histories[variant] = fit_adem(
            train_vectors, human, groups, variant=variant, n=args.n, gamma=args.gamma, lr=args.lr,
            batch_size=args.batch_size, epochs=args.epochs, patience=args.patience, seed=args.seed, log=log)
    # "VHRED": the dot products at initialisation (M = N = I), as in Table 3.
    init = AdemHead(heads["adem"].mean.numpy(), heads["adem"].components.numpy(), "adem",
                    histories["adem"]["alpha"], histories["adem"]["beta"])
    baselines = baseline_scores(dev_items, args.store)
    if not baselines:
        log.warning("no bleu4, rouge-l or length in %s: the card compares with no baseline", args.store)
    report = dev_report({**heads, "vhred (init)": init}, dev_vectors, dev_human, dev_items, sets, baselines)
    for name, rows in report.items():
        log.info("dev %s (%d items): %s", name, rows["adem"]["item"]["n"],
                 {k: v["item"]["pearson"] for k, v in rows.items()})

    metrics = {"sets": list(sets), "train_items": len(train_items), "dev_items": len(dev_items),
               "training": {v: {k: x for k, x in h.items() if k != "history"} | {"epochs_run": len(h["history"]) - 1}
                            for v, h in histories.items()},
               "dev": report, "seed": args.seed, "minutes": round((time.time() - started) / 60, 1),
               **encoder_record(args.encoder)}
    save_run(args.out, {v: {"state": h.state_dict(), "variant": v} for v, h in heads.items()}, metrics, log)
    return 0
