"""`python -m training train autojudge`: AutoJudge on turn-level ratings without references.

Fits M on each set's `train` partition, reports each set's `dev` partition and the paper's Table 1
cross-validations (CONVO SPLIT by context, SYSTEM SPLIT by system); writes head.pt and metrics.json."""
from __future__ import annotations

import argparse
import logging
import time

import numpy as np
import torch

from training.autojudge.model import AutoJudgeHead
from training.core.cli import at_least_two, names_from
from training.core.heads import (add_head_options, calibrate_head, clear_head_outputs, context_groups, correlations, dev_report,
                                 encoder_record, group_folds, load_judged, predict, save_run, train_head,
                                 validation_mask)
from training.core.progress import setup_logging
from training.data.judgements import SETS
from training.data.trained_items import AUTOJUDGE_SETS
from training.encoders.hred.encoder import HREDTextEncoder

DEFAULT_SETS = AUTOJUDGE_SETS  # the served head's, whose training keys the store ships
SYSTEM_SETS = ("dstc7", "dailydialog_gupta_multiref")


def encode_items(encoder: HREDTextEncoder, items: list) -> tuple[np.ndarray, np.ndarray]:
    """(c, r) vectors: context, reply."""
    return (encoder.encode_contexts([i.context for i in items]),
            encoder.encode_responses([i.response for i in items]))


def fit_autojudge(train: tuple[np.ndarray, np.ndarray], human: np.ndarray, groups: list[str], *,
                  lr: float = 1e-3, batch_size: int = 512, epochs: int = 300, patience: int = 20,
                  seed: int = 0, valid_fraction: float = 0.15,
                  log: logging.Logger | None = None) -> tuple[AutoJudgeHead, dict]:
    held = validation_mask(groups, valid_fraction, f"autojudge-valid-{seed}")
    fit = ~held
    head = AutoJudgeHead(train[0].shape[1])
    alpha, beta = calibrate_head(head, tuple(x[fit] for x in train), human[fit])
    history = train_head(head, tuple(x[fit] for x in train), human[fit], tuple(x[held] for x in train),
                         human[held], lr=lr, batch_size=batch_size, epochs=epochs, patience=patience,
                         seed=seed, reduction="mean", log=log)
    history.update({"alpha": alpha, "beta": beta, "fit_items": int(fit.sum()), "valid_items": int(held.sum()),
                    "lr": lr, "batch_size": batch_size})
    return head, history


def cross_validate(vectors: tuple[np.ndarray, np.ndarray], human: np.ndarray, folds: np.ndarray,
                   groups: list[str], seed: int, **fit_args) -> dict:
    """Mean over folds of Pearson, Spearman and MAE of a head trained on the other folds."""
    rows = []
    for fold in sorted(set(folds.tolist())):
        test = folds == fold
        train = ~test
        head, _ = fit_autojudge(tuple(x[train] for x in vectors), human[train],
                                [g for g, t in zip(groups, train) if t], seed=seed, **fit_args)
        rows.append(correlations(predict(head, tuple(x[test] for x in vectors)), human[test]))
    def mean(key: str) -> float | None:
        values = [r[key] for r in rows if r[key] is not None]
        return round(float(np.mean(values)), 4) if values else None
    return {"folds": len(rows), "pearson": mean("pearson"), "spearman": mean("spearman"), "mae": mean("mae"),
            "per_fold": [{k: r[k] for k in ("n", "pearson", "spearman", "mae")} for r in rows]}


def table_one(encoder: HREDTextEncoder, vectors: tuple[np.ndarray, np.ndarray], human: np.ndarray, items: list,
              system_items: list, system_sets: tuple[str, ...], folds: int, seed: int, log: logging.Logger,
              **fit_args) -> dict:
    """The paper's Table 1: CONVO SPLIT (k folds by context over `items`) and SYSTEM SPLIT (one fold per
    system of `system_items`, read from `system_sets`; None with fewer than two systems)."""
    groups = context_groups(items)
    log.info("CONVO SPLIT: up to %d-fold cross-validation by context", folds)
    convo = cross_validate(vectors, human, group_folds(groups, folds, "convo"), groups, seed, **fit_args)
    system_split = None
    names = sorted({i.system for i in system_items if i.system})
    if len(names) >= 2:
        log.info("SYSTEM SPLIT: leave-one-system-out over %d systems of %s", len(names), ",".join(system_sets))
        keys = [f"{i.set}:{i.system}" for i in system_items]
        index = {k: n for n, k in enumerate(sorted(set(keys)))}
        system_split = cross_validate(encode_items(encoder, system_items),
                                      np.array([i.score for i in system_items], dtype=np.float32),
                                      np.array([index[k] for k in keys]), context_groups(system_items), seed,
                                      **fit_args)
        system_split["sets"] = list(system_sets)
    log.info("CONVO SPLIT pearson %s spearman %s mae %s; SYSTEM SPLIT %s", convo["pearson"], convo["spearman"],
             convo["mae"], system_split and {k: system_split[k] for k in ("pearson", "spearman", "mae")})
    return {"convo_split": convo, "system_split": system_split}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m training train autojudge", description=__doc__)
    add_head_options(parser, "runs/autojudge", DEFAULT_SETS, lr=1e-3, batch_size=512, epochs=300, patience=20)
    parser.add_argument("--system-sets", type=names_from(tuple(SETS)), default=",".join(SYSTEM_SETS))
    parser.add_argument("--folds", type=at_least_two, default=10)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = setup_logging(args.out / "train.log")
    torch.set_num_threads(1)
    started = time.time()
    sets = tuple(s for s in args.sets.split(",") if s)
    system_sets = tuple(s for s in args.system_sets.split(",") if s)
    fit_args = {"lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs, "patience": args.patience}

    train_items, dev_items = load_judged(sets, "train", args.data_dir), load_judged(sets, "dev", args.data_dir)
    if args.max_items:
        train_items, dev_items = train_items[:args.max_items], dev_items[:args.max_items]
    log.info("AutoJudge on %s: %d train items, %d dev items", ",".join(sets), len(train_items), len(dev_items))
    encoder = HREDTextEncoder.from_run(args.encoder)
    train_vectors, dev_vectors = encode_items(encoder, train_items), encode_items(encoder, dev_items)
    clear_head_outputs(args.out)
    human = np.array([i.score for i in train_items], dtype=np.float32)
    dev_human = np.array([i.score for i in dev_items], dtype=np.float32)
    groups = context_groups(train_items)  # early stopping holds out whole contexts, as CONVO SPLIT folds

    head, history = fit_autojudge(train_vectors, human, groups, seed=args.seed, log=log, **fit_args)
    init = AutoJudgeHead(head.M.shape[0], history["alpha"], history["beta"])
    report = dev_report({"autojudge": head, "init (M = I)": init}, dev_vectors, dev_human, dev_items, sets)
    for name, rows in report.items():
        log.info("dev %s (%d items): pearson %s", name, rows["autojudge"]["item"]["n"],
                 rows["autojudge"]["item"]["pearson"])

    # Table 1: k-fold cross-validation over train + dev, by context and by system.
    system_items = load_judged(system_sets, "all", args.data_dir) if system_sets else []
    if args.max_items:
        system_items = system_items[:args.max_items * 2]
    cross_validation = table_one(encoder, tuple(np.concatenate([a, b]) for a, b in zip(train_vectors, dev_vectors)),
                                 np.concatenate([human, dev_human]), train_items + dev_items, system_items,
                                 system_sets, args.folds, args.seed, log, **fit_args)

    metrics = {"sets": list(sets), "train_items": len(train_items), "dev_items": len(dev_items),
               "training": {k: v for k, v in history.items() if k != "history"} | {
                   "epochs_run": len(history["history"]) - 1},
               "dev": report, "cross_validation": cross_validation,
               "seed": args.seed, "minutes": round((time.time() - started) / 60, 1), **encoder_record(args.encoder)}
    save_run(args.out, {"state": head.state_dict()}, metrics, log)
    return 0
