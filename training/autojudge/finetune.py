"""`python -m training finetune-minilm`: a measurement, not a served model: autojudge-minilm with the
MiniLM encoder fine-tuned too, its dev Pearson per set after each epoch."""
from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

from service.scorers.heads import context_texts
from training.core.cli import count, output_file, positive_float, positive_int, threads
from training.autojudge.model import AutoJudgeHead
from training.core.turn_training import Config as HeadConfig
from training.data.negatives import judged_rows
from training.encoders.minilm.export import model_path


@dataclass
class FineTuneConfig:
    epochs: int = 2
    batch: int = 32
    encoder_lr: float = 2e-5  # the usual rate for fine-tuning BERT-sized encoders
    head_lr: float = 1e-3  # the served head's rate (train-minilm)
    max_length: int = 64  # word pieces; judged turns are short and training cost grows with length
    seed: int = 0


Rows = dict[str, tuple[list[str], list[str], np.ndarray]]
SERVED = HeadConfig()  # the served head's loss weights (l1, rank_weight, margin), shared with train-minilm


def last_turn_rows(split: str, limit: int | None = None) -> Rows:
    """Per judged set: last context turns, replies, human scores (the served `last` encoding)."""
    out = {}
    for name, (contexts, replies, _, scores) in judged_rows(split, referenced=False, limit=limit).items():
        out[name] = ([context_texts(c, "last")[-1] for c in contexts], replies, scores)
    return out


class TunedAutoJudge(torch.nn.Module):
    """The sentence-transformers MiniLM (mean pooling, normalisation) under the served AutoJudge head."""

    def __init__(self, max_length: int) -> None:
        super().__init__()
        from sentence_transformers import SentenceTransformer

        self.encoder = SentenceTransformer(str(model_path()), device="cpu")
        self.encoder.max_seq_length = max_length
        self.head = AutoJudgeHead.on_turns("last")

    def embed(self, texts: list[str]) -> torch.Tensor:
        features = self.encoder.preprocess(texts)
        return self.encoder({k: v for k, v in features.items() if torch.is_tensor(v)})["sentence_embedding"]

    def forward(self, last_turns: torch.Tensor, replies: torch.Tensor) -> torch.Tensor:
        context = last_turns.unsqueeze(1)
        return self.head(context, torch.ones(context.shape[:2]), replies)["score"]


def dev_pearson(model: TunedAutoJudge, rows: Rows, chunk: int = 256) -> dict[str, float]:
    """Pearson r per set; each distinct text is embedded once, as the service does."""
    model.eval()
    result = {}
    with torch.no_grad():
        for name, (turns, replies, scores) in rows.items():
            texts = list(dict.fromkeys(turns + replies))
            vectors = torch.cat([model.embed(texts[i:i + chunk]) for i in range(0, len(texts), chunk)])
            row = {t: i for i, t in enumerate(texts)}
            predicted = model(vectors[[row[t] for t in turns]], vectors[[row[r] for r in replies]]).numpy()
            result[name] = round(float(stats.pearsonr(predicted, scores)[0]), 4)
    model.train()
    return result


def fine_tune(config: FineTuneConfig, train_rows: Rows, dev_rows: Rows, log: Callable[[str], None] = print,
              ) -> tuple[TunedAutoJudge, list[dict[str, float]]]:
    """Train; returns the model and the dev Pearson before training and after each epoch."""
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    model = TunedAutoJudge(config.max_length)
    turns = [t for rows in train_rows.values() for t in rows[0]]
    replies = [r for rows in train_rows.values() for r in rows[1]]
    scores = torch.from_numpy(np.concatenate([rows[2] for rows in train_rows.values()]))
    optimiser = torch.optim.AdamW([
        {"params": model.encoder.parameters(), "lr": config.encoder_lr},
        {"params": model.head.parameters(), "lr": config.head_lr, "weight_decay": 0.0}])
    history = [dev_pearson(model, dev_rows)]
    log(f"frozen encoder, head at its start (the cosine of the last turn): {json.dumps(history[0])}")
    steps = max(1, len(scores) // config.batch)
    started = time.time()
    for epoch in range(config.epochs):
        order = np.random.default_rng(config.seed + epoch).permutation(len(scores))
        for step in range(steps):
            index = order[step * config.batch:(step + 1) * config.batch]
            context = model.embed([turns[i] for i in index])
            good = model(context, model.embed([replies[i] for i in index]))
            bad = model(context, model.embed([replies[rng.randrange(len(replies))] for _ in index]))
            loss = (((good - scores[index]) ** 2).mean()
                    + SERVED.rank_weight * torch.relu(SERVED.margin - (good - bad)).mean()
                    + SERVED.l1 * model.head.regulariser())
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            if step % 50 == 0 or step == steps - 1:
                log(f"epoch {epoch + 1}/{config.epochs} step {step + 1}/{steps} loss {loss.item():.3f} "
                    f"({time.time() - started:.0f} s)")
        history.append(dev_pearson(model, dev_rows))
        log(f"epoch {epoch + 1}: {json.dumps(history[-1])}")
    return model, history


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training finetune-minilm", description=__doc__)
    parser.add_argument("--epochs", type=positive_int, default=FineTuneConfig.epochs)
    parser.add_argument("--encoder-lr", type=positive_float, default=FineTuneConfig.encoder_lr)
    parser.add_argument("--max-judged", type=positive_int, default=None, help="judged items per set (a quick run)")
    parser.add_argument("--train-per-set", type=positive_int, default=None,
                        help="judged train items per set (dstc7 holds two thirds of them); dev sets whole")
    parser.add_argument("--threads", type=threads, default=2)
    parser.add_argument("--seed", type=count, default=FineTuneConfig.seed)
    parser.add_argument("--results", type=output_file, default=None, help="append the dev figures here, a JSON line per epoch")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = FineTuneConfig(epochs=args.epochs, encoder_lr=args.encoder_lr, seed=args.seed)
    started = time.time()
    _, history = fine_tune(config, last_turn_rows("train", args.train_per_set or args.max_judged),
                           last_turn_rows("dev", args.max_judged))
    if args.results:  # one line per epoch, in train-minilm's format, so minilm-report tables them
        seconds = round(time.time() - started, 1)
        train_cap = f", at most {args.train_per_set} train items a set" if args.train_per_set else ""
        with open(args.results, "a", encoding="utf-8") as handle:
            for epoch, dev in enumerate(history[1:], start=1):
                line = {"model": "autojudge-minilm", "encoding": "last", "pooling": "last", "targets": "raw",
                        "l1": SERVED.l1, "rank_weight": SERVED.rank_weight, "epochs": epoch,
                        "run_seconds": seconds, "seed": config.seed,
                        "dev_pearson": dev, "mean": round(float(np.mean(list(dev.values()))), 4),
                        "note": f"encoder fine-tuned too (`finetune-minilm`, encoder lr {config.encoder_lr}, "
                                f"random-reply negatives only{train_cap}): a measurement, not served"}
                handle.write(json.dumps(line) + "\n")
    return 0
