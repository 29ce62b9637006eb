"""What the ADEM and AutoJudge trainers share: judged items, grouped splits, correlations, scale
calibration, early stopping and the run folder. Kept apart from any encoder, so the same trainers run
on other vectors."""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from service.stats.correlation import correlation
from training.core.checkpoint import save_atomically
from training.core.cli import SetupError, count, names_from, positive_float, positive_int
from training.data.judgements import SETS, JudgedItem, load_set, split_key

# What a head run records of the pre-training run it encoded with, and the same fields of that run's
# metrics.json: together they tell two encoder runs apart (training/export_checks.py).
IDENTITY_FIELDS = ("steps", "kl_anneal_steps", "seed", "weights_sha256")


def add_head_options(parser: argparse.ArgumentParser, out: str, sets: tuple[str, ...], lr: float, batch_size: int,
                     epochs: int, patience: int) -> None:
    """The options of every head trainer, with its own defaults: the encoder run, --out, the judged sets,
    Adam and early stopping, the seed, a cap on items and the data folder."""
    parser.add_argument("--encoder", type=Path, default=Path("runs/vhred"), help="pre-training run folder")
    parser.add_argument("--out", type=Path, default=Path(out))
    parser.add_argument("--sets", type=names_from(tuple(SETS)), default=",".join(sets))
    parser.add_argument("--lr", type=positive_float, default=lr)
    parser.add_argument("--batch-size", type=positive_int, default=batch_size)
    parser.add_argument("--epochs", type=positive_int, default=epochs)
    parser.add_argument("--patience", type=positive_int, default=patience)
    parser.add_argument("--seed", type=count, default=0)
    parser.add_argument("--max-items", type=count, default=0, help="cap per split (tests); 0: all")
    parser.add_argument("--data-dir", type=Path, default=None)


def load_judged(sets: tuple[str, ...], split: str, data_dir: Path | None = None,
                with_references: bool = False) -> list[JudgedItem]:
    """The judged items of `sets` in one split, in order; only those with a reference if asked."""
    kwargs = {"data_dir": data_dir} if data_dir else {}
    return [item for name in sets for item in load_set(name, split, **kwargs)
            if item.references or not with_references]


def group_split(groups: list[str], fraction: float, seed: str) -> np.ndarray:
    """Boolean mask of items whose group hashes into the held-out `fraction` (no group is split)."""
    def held_out(group: str) -> bool:
        digest = hashlib.sha256(f"{seed}\x00{group}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < fraction
    return np.array([held_out(g) for g in groups], dtype=bool)


def validation_mask(groups: list[str], fraction: float, seed: str) -> np.ndarray:
    """group_split for early stopping; with too few groups to split, every 7th item is held out."""
    held = group_split(groups, fraction, seed)
    if held.all() or not held.any():
        held = np.arange(len(groups)) % 7 == 0
    return held


def context_groups(items: list) -> list[str]:
    """The group of each judged item for early stopping and cross-validation: its context.

    The train/dev partition's split key (the normalised last turn; training/data/judgements.py),
    not the conversation id: DSTC7 repeats one context under many ids and the DailyDialog-based
    sets share contexts across sets, so grouping by id would put one context on both sides.
    """
    return [split_key(item) for item in items]


def predict(head: Any, vectors: tuple[np.ndarray, ...]) -> np.ndarray:
    """A head's scores for arrays of encoder vectors (ADEM: c, r_hat, r; AutoJudge: c, r)."""
    with torch.no_grad():
        return head(*[torch.as_tensor(x) for x in vectors]).numpy()


def encoder_record(encoder_run: Path) -> dict[str, Any]:
    """What a head run records of the encoder it was trained on, for its card and for `export`'s check."""
    metrics_path = Path(encoder_run) / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.is_file() else {}
    return {"encoder": str(encoder_run), "encoder_fingerprint": metrics.get("train_fingerprint"),
            "encoder_metrics": {k: metrics.get(k) for k in IDENTITY_FIELDS}}


def clear_head_outputs(out: Path) -> None:
    """A rerun's head.pt and metrics.json go before it writes its own: killed between the two, a run
    left its new head beside the last run's metrics, a pair `export` took as one run."""
    for name in ("head.pt", "metrics.json"):
        (Path(out) / name).unlink(missing_ok=True)


def group_folds(groups: list[str], k: int, seed: str) -> np.ndarray:
    """Fold index 0..k-1 per item; all items of a group in one fold (by a seeded hash)."""
    def fold(group: str) -> int:
        return int.from_bytes(hashlib.sha256(f"{seed}\x00{group}".encode()).digest()[:8], "big") % k
    return np.array([fold(g) for g in groups], dtype=np.int64)


def correlations(predicted: np.ndarray, human: np.ndarray) -> dict[str, float | None]:
    """Pearson r and Spearman rho with p-values, MAE; None (not NaN) when undefined."""
    predicted, human = np.asarray(predicted, float), np.asarray(human, float)
    out: dict[str, float | None] = {"n": int(len(human))}
    for method in ("pearson", "spearman"):  # /correlate's: its exact p for the few systems of a set
        found = correlation(predicted, human, method)
        out.update({method: None if found["r"] is None else round(found["r"], 4), f"{method}_p": found["p"]})
    out["mae"] = round(float(np.mean(np.abs(predicted - human))), 4) if len(human) else None
    return out


def system_correlation(predicted: np.ndarray, human: np.ndarray, systems: list[str | None]) -> dict | None:
    """Pearson/Spearman of per-system means (None where there are fewer than 3 systems)."""
    names = sorted({s for s in systems if s is not None})
    if len(names) < 3:
        return None
    index = {s: [i for i, x in enumerate(systems) if x == s] for s in names}
    p = np.array([np.mean(np.asarray(predicted)[index[s]]) for s in names])
    h = np.array([np.mean(np.asarray(human)[index[s]]) for s in names])
    out = correlations(p, h)
    out["systems"] = len(names)
    return out


def calibrate(raw: np.ndarray, human: np.ndarray) -> tuple[float, float]:
    """alpha, beta so that (raw - alpha) / beta has the human scores' mean and spread.

    This is how ADEM's "alpha, beta ... initialize the model's predictions in the range [0, 5]"
    is done here, on our 1-5 scale: at initialisation (M = N = I) predictions already sit on it.
    """
    spread = float(np.std(raw))
    target = float(np.std(human)) or 1.0
    beta = spread / target if spread > 0 and math.isfinite(spread) else 1.0
    alpha = float(np.mean(raw)) - float(np.mean(human)) * beta
    return alpha, beta


def calibrate_head(head, inputs: tuple, human: np.ndarray) -> tuple[float, float]:
    """Set the head's alpha and beta (see `calibrate`) from its raw outputs at initialisation.

    With fewer than two items left to fit after the validation split, alpha would be NaN and every
    score of the head NaN: a SetupError instead."""
    if len(human) < 2:
        raise SetupError(f"{len(human)} item(s) left to fit after the validation split: give more items (--max-items)")

    with torch.no_grad():
        raw = head.raw(*[torch.as_tensor(x) for x in inputs]).numpy()
    alpha, beta = calibrate(raw, human)
    head.alpha.fill_(alpha)
    head.beta.fill_(beta)
    return alpha, beta


def train_head(head, inputs: tuple, human: np.ndarray, valid_inputs: tuple, valid_human: np.ndarray, *,
               lr: float, batch_size: int, epochs: int, patience: int, seed: int,
               reduction: str = "sum", l1: float = 0.0, log: logging.Logger | None = None) -> dict:
    """Adam on squared error (+ l1 * head.l1()), early stopping on validation Pearson r.

    `inputs` are float32 arrays [N, D] fed to head(*inputs). The best epoch's weights are
    restored in `head`. Returns the training history.
    """
    torch.manual_seed(seed)
    tensors = [torch.as_tensor(x, dtype=torch.float32) for x in inputs]
    valid = [torch.as_tensor(x, dtype=torch.float32) for x in valid_inputs]
    target = torch.as_tensor(human, dtype=torch.float32)
    params = [p for p in head.parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(params, lr=lr)
    generator = torch.Generator().manual_seed(seed)

    def validation_r() -> float:
        with torch.no_grad():
            predicted = head(*valid).numpy()
        r = correlations(predicted, valid_human)["pearson"]
        return -1.0 if r is None else float(r)

    best_r, best_state, best_epoch, waited = validation_r(), copy.deepcopy(head.state_dict()), 0, 0
    history = [{"epoch": 0, "valid_pearson": best_r}]
    for epoch in range(1, epochs + 1):
        head.train()
        order = torch.randperm(len(target), generator=generator)
        total = 0.0
        for start in range(0, len(order), batch_size):
            index = order[start:start + batch_size]
            error = head(*[t[index] for t in tensors]) - target[index]
            loss = (error ** 2).sum() if reduction == "sum" else (error ** 2).mean()
            if l1:
                loss = loss + l1 * head.l1()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach())
        head.eval()
        r = validation_r()
        history.append({"epoch": epoch, "train_loss": round(total, 4), "valid_pearson": r})
        if log is not None:
            log.info("epoch %d/%d train loss %.4g valid pearson %.4f (best %.4f @ %d)", epoch, epochs,
                     total, r, max(r, best_r), epoch if r > best_r else best_epoch)
        if r > best_r:
            best_r, best_state, best_epoch, waited = r, copy.deepcopy(head.state_dict()), epoch, 0
        else:
            waited += 1
            if waited >= patience:
                break
    head.load_state_dict(best_state)
    head.eval()
    return {"best_epoch": best_epoch, "best_valid_pearson": best_r, "history": history}


def dev_report(heads: dict[str, Any], vectors: tuple[np.ndarray, ...], human: np.ndarray, items: list[JudgedItem],
               sets: tuple[str, ...], scores: dict[str, np.ndarray] | None = None) -> dict[str, dict[str, dict]]:
    """Per dev set: item- and system-level correlations of each head's predictions and of each
    precomputed score array (baselines), in that order; sets without items are left out."""
    report = {}
    for name in sets:
        index = [k for k, i in enumerate(items) if i.set == name]
        if not index:
            continue
        subset = tuple(x[index] for x in vectors)
        systems = [items[k].system for k in index]
        predicted = {label: predict(head, subset) for label, head in heads.items()}
        predicted.update({label: values[index] for label, values in (scores or {}).items()})
        report[name] = {label: {"item": correlations(values, human[index]),
                                "system": system_correlation(values, human[index], systems)}
                        for label, values in predicted.items()}
    return report


def save_run(out: Path, payload: dict, metrics: dict, log: logging.Logger) -> None:
    """head.pt (written whole or not at all) and metrics.json, the pair `export` reads as one run."""
    save_atomically(payload, Path(out) / "head.pt")
    (Path(out) / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    log.info("wrote %s in %.1f min", out, metrics["minutes"])
