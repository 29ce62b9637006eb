"""`python -m training train autojudge`: AutoJudge on turn-level ratings without references.

Fits M on the `train` partition of the reference-free sets, early-stopping on 15% of training
contexts, reports each set's `dev` partition, and the paper's two k-fold
cross-validations (its Table 1): CONVO SPLIT (10 folds by context, the paper's conversation: every
reply to one context in one fold, also where several sets share it) and SYSTEM SPLIT
(one fold per dialogue system, on the sets that name systems). Hyperparameters as the
paper's appendix: Adam, lr 0.001, batch 512, mean squared error.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from training.autojudge.model import AutoJudgeHead
from training.hred.model import save_atomically
from training.core.heads import (calibrate_head, clear_head_outputs, context_groups, correlations, encoder_record, group_folds, predict,
                            system_correlation, train_head, validation_mask)
from training.core.progress import setup_logging
from training.data.judgements import SETS
from training.core.cli import at_least_two, count, names_from, positive_float, positive_int

DEFAULT_SETS = ("xdial_dailydialog_zhao", "xdial_persona_zhao", "conture", "holistic_eval",
                "predictive_engagement", "dailydialog_gupta_multiref")
SYSTEM_SETS = ("dstc7", "dailydialog_gupta_multiref")


def load_items(sets: tuple[str, ...], split: str, data_dir: Path | None = None) -> list:
    from training.data import judgements

    kwargs = {"data_dir": data_dir} if data_dir else {}
    return [item for name in sets for item in judgements.load_set(name, split, **kwargs)]


def encode_items(encoder, items: list) -> tuple[np.ndarray, np.ndarray]:
    return (encoder.encode_contexts([i.context for i in items]),
            encoder.encode_responses([i.response for i in items]))


def fit_autojudge(train: tuple[np.ndarray, np.ndarray], human: np.ndarray, groups: list[str], *,
                  lr: float = 1e-3, batch_size: int = 512, epochs: int = 300, patience: int = 20,
                  seed: int = 0, valid_fraction: float = 0.15, log=None) -> tuple[AutoJudgeHead, dict]:
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


def main(argv: list[str]) -> int:
    from training.hred.encoder import HREDTextEncoder

    parser = argparse.ArgumentParser(prog="python -m training train autojudge", description=__doc__)
    parser.add_argument("--encoder", type=Path, default=Path("runs/vhred"))
    parser.add_argument("--out", type=Path, default=Path("runs/autojudge"))
    parser.add_argument("--sets", type=names_from(tuple(SETS)), default=",".join(DEFAULT_SETS))
    parser.add_argument("--system-sets", type=names_from(tuple(SETS)), default=",".join(SYSTEM_SETS))
    parser.add_argument("--lr", type=positive_float, default=1e-3)
    parser.add_argument("--batch-size", type=positive_int, default=512)
    parser.add_argument("--epochs", type=positive_int, default=300)
    parser.add_argument("--patience", type=positive_int, default=20)
    parser.add_argument("--folds", type=at_least_two, default=10)
    parser.add_argument("--seed", type=count, default=0)
    parser.add_argument("--max-items", type=count, default=0, help="cap per split (tests); 0: all")
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = setup_logging(args.out / "train.log")
    torch.set_num_threads(1)
    started = time.time()
    sets = tuple(s for s in args.sets.split(",") if s)
    system_sets = tuple(s for s in args.system_sets.split(",") if s)
    fit_args = {"lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs, "patience": args.patience}

    train_items, dev_items = load_items(sets, "train", args.data_dir), load_items(sets, "dev", args.data_dir)
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
    report = {}
    for name in sets:
        index = [k for k, i in enumerate(dev_items) if i.set == name]
        if not index:
            continue
        subset = tuple(x[index] for x in dev_vectors)
        systems = [dev_items[k].system for k in index]
        report[name] = {label: {"item": correlations(predict(h, subset), dev_human[index]),
                                "system": system_correlation(predict(h, subset), dev_human[index], systems)}
                        for label, h in (("autojudge", head), ("init (M = I)", init))}
        log.info("dev %s (%d items): pearson %s", name, len(index), report[name]["autojudge"]["item"]["pearson"])

    # Table 1: k-fold cross-validation over train + dev, by context and by system.
    all_items = train_items + dev_items
    all_vectors = tuple(np.concatenate([a, b]) for a, b in zip(train_vectors, dev_vectors))
    all_human = np.concatenate([human, dev_human])
    all_groups = context_groups(all_items)
    log.info("CONVO SPLIT: up to %d-fold cross-validation by context", args.folds)
    convo = cross_validate(all_vectors, all_human, group_folds(all_groups, args.folds, "convo"), all_groups,
                           args.seed, **fit_args)
    system_split = None
    sys_items = load_items(system_sets, "all", args.data_dir) if system_sets else []
    if args.max_items:
        sys_items = sys_items[:args.max_items * 2]
    names = sorted({i.system for i in sys_items if i.system})
    if len(names) >= 2:
        log.info("SYSTEM SPLIT: leave-one-system-out over %d systems of %s", len(names), ",".join(system_sets))
        sys_vectors = encode_items(encoder, sys_items)
        sys_human = np.array([i.score for i in sys_items], dtype=np.float32)
        keys = [f"{i.set}:{i.system}" for i in sys_items]
        index = {k: n for n, k in enumerate(sorted(set(keys)))}
        system_split = cross_validate(sys_vectors, sys_human, np.array([index[k] for k in keys]),
                                      context_groups(sys_items), args.seed, **fit_args)
        system_split["sets"] = list(system_sets)
    log.info("CONVO SPLIT pearson %s spearman %s mae %s; SYSTEM SPLIT %s", convo["pearson"], convo["spearman"],
             convo["mae"], system_split and {k: system_split[k] for k in ("pearson", "spearman", "mae")})

    save_atomically({"state": head.state_dict()}, args.out / "head.pt")
    metrics = {"sets": list(sets), "train_items": len(train_items), "dev_items": len(dev_items),
               "training": {k: v for k, v in history.items() if k != "history"} | {
                   "epochs_run": len(history["history"]) - 1},
               "dev": report, "cross_validation": {"convo_split": convo, "system_split": system_split},
               "seed": args.seed, "minutes": round((time.time() - started) / 60, 1), **encoder_record(args.encoder)}
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    log.info("wrote %s in %.1f min", args.out, metrics["minutes"])
    return 0


def load_run(folder: Path) -> tuple[AutoJudgeHead, dict]:
    state = torch.load(Path(folder) / "head.pt", map_location="cpu", weights_only=True)["state"]
    head = AutoJudgeHead(state["M"].shape[0])
    head.load_state_dict(state)
    return head.eval(), json.loads((Path(folder) / "metrics.json").read_text())


def export_run(run: Path, folder: Path, version: str, encoder_name: str = "hred-encoder") -> dict[str, float]:
    """model_store/autojudge: autojudge_head.onnx (c, r -> score), manifest and card."""
    from service.manifest import write_manifest
    from training import cards
    from training.core.onnx_export import export_head

    head, metrics = load_run(run)

    def write(target: Path, parity: dict[str, float]) -> None:
        config = {"head": "autojudge_head.onnx", "encoder": encoder_name, "alpha": float(head.alpha),
                  "beta": float(head.beta), "parity_max_abs_diff": parity}
        write_manifest(target, name=target.name, version=version, kind="unreferenced", scorer="autojudge",
                       score_range=(1.0, 5.0), uses=[encoder_name], config=config,
                       card=cards.autojudge_card(metrics))
        cards.write_readme(target, cards.autojudge_readme(target, metrics, parity,
                                                              int(head.M.shape[0]), cards.context_turns(target.parent / encoder_name)))

    return export_head(head, 2, ["c", "r"], folder, "autojudge_head.onnx", head.M.shape[0], write)
