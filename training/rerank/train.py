"""`python -m training.rerank.train`: fine-tune the MiniLM cross-encoder on a packed folder (pack.py), fold-wise.

The device runs this module as it is, so it imports numpy, torch, transformers, safetensors and onnx only.
It trains the model on every group first (its weights come back), then one model per leave-one-set-out
group without that group's rated rows, whose scores on those rows are out-of-fold values for a stack.
Loss: MSE to the ratings (standardised per set), the listwise softmax of each next-turn group (the human
reply against its negatives), and, where packed, MSE to the teacher column fitted without the same group,
so no in-fold value reaches a stack. Nothing is chosen by the dev rows.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from training.core.cli import count, nonnegative_float, output_dir, positive_float, positive_int
from training.evaluation.pairwise import MIN_PAIRS, pairwise_agreement
from training.rerank.model import CrossEncoder, from_graph
from training.rerank.pieces import Texts, batch

GRAPH = Path(__file__).resolve().parents[2] / "model_store" / "minilm-l6" / "encoder-int8.onnx"
ALL = "all"
PART_BYTES = 15 * 2**20  # the device returns files of at most 16 MiB
WEIGHTS = "weights.safetensors"
RESULTS = "results.json"
# option -> its argparse type (training/core/cli.py: a bad value is a usage error before the GPU is touched)
OPTIONS = {"epochs": positive_int, "rated_batch": positive_int, "max_length": positive_int, "max_reply": positive_int,
           "seed": count, "limit": positive_int, "encoder_lr": positive_float, "head_lr": positive_float,
           "rating_weight": nonnegative_float, "listwise_weight": nonnegative_float,
           "teacher_weight": nonnegative_float, "dropout": nonnegative_float, "deadline_s": positive_float}


@dataclass
class Config:
    epochs: int = 3
    rated_batch: int = 64  # judged rows a step; each step also takes its share of the next-turn groups
    max_length: int = 128  # word pieces of a pair, specials included
    max_reply: int = 48
    encoder_lr: float = 3e-5
    head_lr: float = 1e-3
    warmup: float = 0.06  # share of the steps with a linear warm-up, then linear decay to 0
    rating_weight: float = 1.0
    listwise_weight: float = 1.0
    teacher_weight: float = 1.0
    dropout: float = 0.1
    seed: int = 0
    deadline_s: float = 400.0  # from the start: no model starts, and no epoch goes on, after it
    models: list[str] = field(default_factory=lambda: [ALL])  # ALL and/or leave-one-set-out groups
    limit: int | None = None  # at most this many rated rows and next-turn groups (a quick run)


@dataclass
class Pack:
    texts: Texts
    arrays: dict[str, np.ndarray]
    info: dict

    @classmethod
    def load(cls, folder: Path) -> Pack:
        info = json.loads((folder / "pack.json").read_text(encoding="utf-8"))
        digest = hashlib.sha256((folder / "pack.npz").read_bytes()).hexdigest()
        if digest != info["sha256"]:
            raise ValueError(f"{folder}/pack.npz: sha256 {digest} is not pack.json's {info['sha256']}")
        with np.load(folder / "pack.npz") as saved:
            arrays = {k: saved[k] for k in saved.files}
        return cls(Texts(arrays.pop("ids"), arrays.pop("offsets")), arrays, info)

    def fold_of_rows(self) -> np.ndarray:
        """The leave-one-set-out group of each judged row ('' for a set no stack fits on)."""
        fold_of = self.info["fold_of_set"]
        return np.array([fold_of.get(self.info["sets"][s], "") for s in self.arrays["j_set"]])


def standardised(scores: np.ndarray, sets: np.ndarray) -> np.ndarray:
    """Each set's ratings to mean 0 and standard deviation 1 (a set of one value to 0)."""
    out = np.zeros_like(scores, dtype=np.float32)
    for s in np.unique(sets):
        m = sets == s
        std = scores[m].std()
        out[m] = (scores[m] - scores[m].mean()) / (std if std > 0 else 1.0)
    return out


def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    """Pearson r, None where undefined (n < 3 or a constant side), as service.stats.correlation's to the last
    bits; written again because this script runs on the lent GPU machine with torch and numpy alone
    (test_the_device_script_imports_nothing_of_the_service)."""
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


class Scorer:
    """Scores rows in length-sorted batches, without gradients, in the training precision."""

    def __init__(self, model: CrossEncoder, pack: Pack, config: Config, device: torch.device, rows: int = 512) -> None:
        self.model, self.pack, self.config, self.device, self.rows = model, pack, config, device, rows

    def __call__(self, contexts: np.ndarray, replies: np.ndarray) -> np.ndarray:
        lengths = np.array([len(self.pack.texts.get(int(r))) for r in replies])
        order = np.argsort(lengths, kind="stable")
        out = np.zeros(len(replies), np.float32)
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad(), autocast(self.device):
            for start in range(0, len(order), self.rows):
                index = order[start:start + self.rows]
                inputs = to_device(batch(self.pack.texts, contexts[index], replies[index], self.config.max_length,
                                         self.config.max_reply), self.device)
                out[index] = self.model(**inputs).float().cpu().numpy()
        self.model.train(was_training)
        return out


def autocast(device: torch.device):
    """bf16 autocast on CUDA; float32 elsewhere (the CPU test)."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def to_device(arrays: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v).to(device, non_blocking=True) for k, v in arrays.items()}


def dev_figures(pack: Pack, scores: np.ndarray, rows: np.ndarray) -> dict:
    """Per dev set Pearson and pairwise agreement; means over each distinct set once (pack.json's counted_once),
    pairwise over the sets with at least MIN_PAIRS pairs."""
    a = pack.arrays
    per_set: dict[str, dict] = {}
    for s, name in enumerate(pack.info["sets"]):
        m = rows[a["j_set"][rows] == s]
        if len(m) == 0:
            continue
        share, pairs = pairwise_agreement(a["j_context_group"][m], a["j_score"][m], scores[m])
        per_set[name] = {"pearson": pearson(scores[m], a["j_score"][m]), "pairwise": share, "pairs": pairs,
                         "rows": len(m)}
    counted = [n for n in pack.info["counted_once"] if n in per_set]
    rs = [per_set[n]["pearson"] for n in counted if per_set[n]["pearson"] is not None]
    pws = [per_set[n]["pairwise"] for n in counted
           if per_set[n]["pairwise"] is not None and per_set[n]["pairs"] >= MIN_PAIRS]
    return {"mean_pearson": float(np.mean(rs)) if rs else None, "pearson_sets": len(rs),
            "mean_pairwise": float(np.mean(pws)) if pws else None, "pairwise_sets": len(pws), "per_set": per_set}


def rated_rows(pack: Pack, name: str, limit: int | None = None) -> np.ndarray:
    """The judged train rows model `name` fits: those of every stacked group but `name` (ALL: every one)."""
    folds = pack.fold_of_rows()
    return np.flatnonzero(pack.arrays["j_train"] & (folds != "") & (folds != name))[:limit]


def train_one(name: str, pack: Pack, config: Config, device: torch.device, started: float, graph: Path,
              log: Callable[[str], None] = print) -> tuple[CrossEncoder, dict]:
    """Fine-tune one model: `name` is ALL or the leave-one-set-out group left out of its rated rows."""
    a = pack.arrays
    rng = np.random.default_rng(config.seed)
    rated = rated_rows(pack, name, config.limit)
    groups = np.arange(len(a["g_replies"]))[:config.limit]
    if not len(rated) and not len(groups):
        raise ValueError(f"{name}: no rated row and no next-turn group to train on")
    target = standardised(a["j_score"][rated], a["j_set"][rated])
    columns = pack.info["teacher_columns"]
    column = columns.index(name) if name in columns and config.teacher_weight > 0 else None
    teacher_j = teacher_g = None
    if column is not None:  # standardised over the column's finite values, judged rows and groups together
        values = np.concatenate([a["j_teacher"][rated, column],
                                 a["g_teacher"][groups, :, column].ravel()]).astype(np.float32)
        finite = values[np.isfinite(values)]
        centre, scale = (finite.mean(), finite.std() or 1.0) if len(finite) else (0.0, 1.0)
        teacher_j = (a["j_teacher"][rated, column].astype(np.float32) - centre) / scale
        teacher_g = (a["g_teacher"][groups, :, column].astype(np.float32) - centre) / scale
    torch.manual_seed(config.seed)
    model = from_graph(graph, config.dropout, config.seed).to(device).train()
    head = set(model.head.parameters())
    optimiser = torch.optim.AdamW(
        [{"params": [p for p in model.parameters() if p not in head], "lr": config.encoder_lr},
         {"params": list(head), "lr": config.head_lr, "weight_decay": 0.0}],
        **({"fused": True} if device.type == "cuda" else {}))
    steps = max(1, math.ceil(len(rated) / config.rated_batch))
    per_step = math.ceil(len(groups) / steps) if len(groups) else 0
    total = steps * config.epochs
    warm = max(1, int(config.warmup * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm))))
    history: list[dict] = []
    pairs_seen, train_seconds, stopped = 0, 0.0, False
    for epoch in range(config.epochs):
        r_order, g_order = rng.permutation(len(rated)), rng.permutation(len(groups))
        sums = {"rating": 0.0, "listwise": 0.0, "teacher": 0.0, "total": 0.0}
        epoch_started = time.time()
        done = 0
        for step in range(steps):
            if time.time() - started > config.deadline_s:
                stopped = True
                break
            r = r_order[step * config.rated_batch:(step + 1) * config.rated_batch]
            g = g_order[step * per_step:(step + 1) * per_step]
            candidates = a["g_replies"][groups[g]]
            valid = candidates >= 0
            contexts = np.concatenate([a["j_context"][rated[r]],
                                       np.repeat(a["g_context"][groups[g]], valid.sum(1), axis=0)])
            replies = np.concatenate([a["j_reply"][rated[r]], candidates[valid]])
            inputs = to_device(batch(pack.texts, contexts, replies, config.max_length, config.max_reply), device)
            with autocast(device):
                scores = model(**inputs).float()
            rated_scores, group_flat = scores[:len(r)], scores[len(r):]
            losses = {}
            if len(r):
                losses["rating"] = ((rated_scores - torch.from_numpy(target[r]).to(device)) ** 2).mean()
            if len(g):
                grid = torch.full(candidates.shape, -1e4, device=device)  # a missing candidate's score: never chosen
                grid[torch.from_numpy(valid).to(device)] = group_flat
                first = torch.zeros(len(g), dtype=torch.long, device=device)  # the human reply is column 0
                losses["listwise"] = torch.nn.functional.cross_entropy(grid, first)
            if teacher_j is not None:
                wanted = torch.from_numpy(np.concatenate([teacher_j[r], teacher_g[g][valid]])).to(device)
                known = torch.isfinite(wanted)
                if known.any():
                    losses["teacher"] = ((scores[known] - wanted[known]) ** 2).mean()
            weights = {"rating": config.rating_weight, "listwise": config.listwise_weight,
                       "teacher": config.teacher_weight}
            loss = sum(weights[k] * v for k, v in losses.items())
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            for k, v in losses.items():
                sums[k] += float(v.detach())
            sums["total"] += float(loss.detach())
            pairs_seen += len(replies)
            done += 1
        if device.type == "cuda":
            torch.cuda.synchronize()
        train_seconds += time.time() - epoch_started
        record = {"epoch": epoch + 1, "steps": done, "loss": {k: round(v / max(1, done), 5) for k, v in sums.items()},
                  "seconds": round(time.time() - epoch_started, 1), "stopped_by_deadline": stopped}
        if name == ALL:
            dev = np.flatnonzero(~a["j_train"])[:config.limit]
            scores_dev = Scorer(model, pack, config, device)(a["j_context"][dev], a["j_reply"][dev])
            figures = dev_figures(pack, scatter(scores_dev, dev, len(a["j_score"])), dev)
            record["dev"] = figures
            log(f"{name} epoch {epoch + 1}: loss {record['loss']} dev r {figures['mean_pearson']} "
                f"pairwise {figures['mean_pairwise']} ({record['seconds']} s)")
        else:
            log(f"{name} epoch {epoch + 1}: loss {record['loss']} ({record['seconds']} s)")
        history.append(record)
        if stopped:
            break
    summary = {"model": name, "rated_rows": len(rated), "next_turn_groups": len(groups),
               "teacher_column": None if column is None else columns[column], "epochs": history,
               "pairs_per_second": round(pairs_seen / train_seconds, 1) if train_seconds else None}
    return model, summary


def scatter(values: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    out = np.full(size, np.nan, np.float32)
    out[rows] = values
    return out


def out_of_fold(model: CrossEncoder, name: str, pack: Pack, config: Config, device: torch.device) -> dict:
    """The held-out group's train rows, scored by the model fitted without them, and their Pearson per set."""
    a = pack.arrays
    rows = np.flatnonzero(a["j_train"] & (pack.fold_of_rows() == name))[:config.limit]
    scores = Scorer(model, pack, config, device)(a["j_context"][rows], a["j_reply"][rows])
    per_set = {}
    for s in np.unique(a["j_set"][rows]):
        m = a["j_set"][rows] == s
        per_set[pack.info["sets"][s]] = pearson(scores[m], a["j_score"][rows][m])
    return {"rows": rows.tolist(), "scores": [round(float(v), 5) for v in scores], "pearson": per_set}


def save_weights(model: CrossEncoder, out: Path) -> dict:
    """The model's weights in float16, in parts of at most PART_BYTES, with the whole file's sha256."""
    from safetensors.torch import save

    state = {k: v.detach().to("cpu", torch.float16).contiguous() for k, v in model.state_dict().items()
             if not k.endswith("position_ids")}
    data = save(state, metadata={"dtype": "float16"})
    parts = []
    for i in range(0, len(data), PART_BYTES):
        name = f"{WEIGHTS}.part{i // PART_BYTES:02d}"
        (out / name).write_bytes(data[i:i + PART_BYTES])
        parts.append(name)
    return {"parts": parts, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def run(pack_folder: Path, out: Path, config: Config, device: torch.device, graph: Path = GRAPH,
        log: Callable[[str], None] = print) -> dict:
    """Train config.models in order (ALL first), write the weights of ALL and RESULTS; returns the results."""
    started = time.time()
    pack = Pack.load(pack_folder)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {"config": asdict(config), "device": describe(device), "pack": {k: v for k, v in pack.info.items()
                     if k != "fold_of_set"}, "models": [], "skipped": [], "out_of_fold": {}}
    for name in config.models:
        if time.time() - started > config.deadline_s:
            results["skipped"].append(name)
            log(f"{name}: skipped, past the deadline")
            continue
        model, summary = train_one(name, pack, config, device, started, graph, log)
        results["models"].append(summary)
        if name == ALL:
            results["weights"] = save_weights(model, out)
        else:
            results["out_of_fold"][name] = out_of_fold(model, name, pack, config, device)
        del model
        write_results(out, results, started)
    write_results(out, results, started)
    return results


def write_results(out: Path, results: dict, started: float) -> None:
    results["seconds"] = round(time.time() - started, 1)
    (out / RESULTS).write_text(json.dumps(results) + "\n", encoding="utf-8")


def describe(device: torch.device) -> dict:
    found = {"device": str(device), "torch": torch.__version__}
    if device.type == "cuda":
        found["gpu"] = torch.cuda.get_device_name(device)
    return found


def pack_folder(text: str) -> Path:
    """A folder pack-rerank wrote (its pack.json and pack.npz)."""
    path = Path(text)
    if not (path / "pack.json").is_file() or not (path / "pack.npz").is_file():
        raise argparse.ArgumentTypeError(f"{path} holds no pack.json and pack.npz (python -m training pack-rerank)")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.rerank.train", description=__doc__)
    parser.add_argument("--pack", type=pack_folder, default=Path("build/rerank-pack"))
    parser.add_argument("--out", type=output_dir, required=True, help="where the weights' parts and results.json go")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--graph", type=Path, default=GRAPH, help="the int8 MiniLM graph the weights start from")
    parser.add_argument("--models", default=ALL,
                        help=f"comma-separated: {ALL} and leave-one-set-out groups, or 'every' ({ALL} then each group)")
    defaults = Config()
    for key, kind in OPTIONS.items():
        parser.add_argument(f"--{key.replace('_', '-')}", type=kind, default=getattr(defaults, key))
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (torch's default unless given)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    folds = Pack.load(args.pack).info["folds"]
    models = [ALL, *folds] if args.models == "every" else args.models.split(",")
    unknown = [m for m in models if m != ALL and m not in folds]
    if unknown:
        parser.error(f"--models: unknown groups {unknown}; the pack's are {folds}")
    config = Config(**{k: getattr(args, k) for k in OPTIONS}, models=models)
    run(args.pack, args.out, config, torch.device(args.device), args.graph)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
