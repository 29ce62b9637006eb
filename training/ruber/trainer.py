"""Negative-sampling training of the unreferenced scorer (Tao et al. 2018, eq. 7). No human labels.

Generic over encoders: it only calls `encoder.collate(rows)` and the scorer's forward, so a
different utterance encoder trains with the same loop.
"""
from __future__ import annotations

import copy
import logging
import random
import time
from dataclasses import asdict, dataclass

import torch

from training.core.progress import Progress
from training.ruber.data import Pairs
from training.ruber.model import UnreferencedScorer, margin_loss


@dataclass
class TrainConfig:
    batch_size: int = 128
    learning_rate: float = 1e-3  # Adam, as the paper
    max_steps: int = 30000
    # Wall-clock cap; training stops at whichever of it and max_steps comes first. None: no cap. A cap
    # that binds makes the model depend on the machine's speed, so `make train` passes none.
    max_minutes: float | None = 20.0
    eval_every: int = 500
    patience: int = 8  # evaluations without a better validation loss before stopping
    seed: int = 13

    def to_dict(self) -> dict:
        return asdict(self)


def _negatives(count: int, total: int, exclude: list[int], rng: random.Random) -> list[int]:
    """Random reply indices, never the positive's own."""
    out = []
    for i in range(count):
        j = rng.randrange(total)
        while j == exclude[i] and total > 1:
            j = rng.randrange(total)
        out.append(j)
    return out


def length_sorted_batches(pairs: Pairs, batch_size: int, rng: random.Random, window: int = 50) -> list[list[int]]:
    """One epoch of batches: shuffled, then sorted by length within windows of `window` batches.

    Padding then stays small (a GRU step costs the same for a pad as for a word), and since
    the negatives are drawn from the same batch they have lengths like the true replies', so
    the model cannot tell them apart by length alone.
    """
    order = list(range(len(pairs)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    span = batch_size * window
    for start in range(0, len(order), span):
        chunk = sorted(order[start: start + span],
                       key=lambda i: max(len(pairs.queries[i]), len(pairs.replies[i])))
        batches.extend(chunk[k: k + batch_size] for k in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return [b for b in batches if len(b) > 1]


def _scores(model: UnreferencedScorer, pairs: Pairs, queries: list[int], replies: list[int]) -> torch.Tensor:
    q = model.query_encoder.collate([pairs.queries[i] for i in queries])
    r = model.reply_encoder.collate([pairs.replies[i] for i in replies])
    return model(q, r)


@torch.no_grad()
def evaluate_ranking(model: UnreferencedScorer, pairs: Pairs, margin: float, seed: int = 0,
                     batch_size: int = 256) -> dict[str, float]:
    """Validation margin loss and how often the true reply outscores a fixed random one."""
    model.eval()
    rng = random.Random(seed)
    index = list(range(len(pairs)))
    negative = _negatives(len(index), len(pairs), index, rng)
    losses, wins = 0.0, 0
    for start in range(0, len(index), batch_size):
        chunk = index[start: start + batch_size]
        neg = negative[start: start + batch_size]
        pos_s = _scores(model, pairs, chunk, chunk)
        neg_s = _scores(model, pairs, chunk, neg)
        losses += float(margin_loss(pos_s, neg_s, margin)) * len(chunk)
        wins += int((pos_s > neg_s).sum())
    model.train()
    return {"loss": losses / max(1, len(index)), "accuracy": wins / max(1, len(index))}


def train_unreferenced(model: UnreferencedScorer, train: Pairs, valid: Pairs, margin: float,
                       config: TrainConfig, log: logging.Logger) -> dict:
    """Train in place with Adam, keep the weights of the best validation loss; returns the history."""
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(parameters, lr=config.learning_rate)
    progress = Progress(config.max_steps, "ruber", log, every=max(1, config.eval_every // 5))
    best = {"loss": float("inf"), "step": 0, "accuracy": 0.0}
    best_state = copy.deepcopy(model.state_dict())
    history: list[dict] = []
    started = time.monotonic()
    batches: list[list[int]] = []
    running = 0.0
    bad_evaluations = 0
    step = 0
    out_of_time = False
    model.train()
    for step in range(1, config.max_steps + 1):
        if not batches:
            batches = length_sorted_batches(train, config.batch_size, rng)
            if not batches:  # the negatives come from the batch: a pair alone has none
                from training.core.cli import SetupError

                raise SetupError(f"{len(train.queries)} training pair(s) make no batch of two or more: RUBER's "
                                 "negatives are the other replies of a batch (give more pairs, --batch-size 2 or more)")
        batch = batches.pop()
        # The negative for each query is another pair's reply from the same (random) batch:
        # a random training reply, and its encoding is already computed.
        q = model.query_encoder.encode(model.query_encoder.collate([train.queries[i] for i in batch]))
        r = model.reply_encoder.encode(model.reply_encoder.collate([train.replies[i] for i in batch]))
        shift = rng.randrange(1, len(batch))
        loss = margin_loss(model.head(q, r), model.head(q, torch.roll(r, shift, dims=0)), margin)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        running = 0.98 * running + 0.02 * loss.item() if step > 1 else loss.item()
        progress.step(step, loss=running)
        out_of_time = config.max_minutes is not None and (time.monotonic() - started) / 60.0 > config.max_minutes
        if step % config.eval_every == 0 or step == config.max_steps or out_of_time:
            result = evaluate_ranking(model, valid, margin)
            result.update(step=step, train_loss=running, minutes=(time.monotonic() - started) / 60.0)
            history.append(result)
            log.info("ruber validation step %d loss %.4f accuracy %.4f", step, result["loss"], result["accuracy"])
            if result["loss"] < best["loss"]:
                best = {"loss": result["loss"], "step": step, "accuracy": result["accuracy"]}
                best_state = copy.deepcopy(model.state_dict())
                bad_evaluations = 0
            else:
                bad_evaluations += 1
            if bad_evaluations >= config.patience:
                log.info("ruber: no better validation loss in %d evaluations, stopping", config.patience)
                break
        if out_of_time:
            if step < config.max_steps:  # a different model from the one --max-steps alone gives
                log.warning("ruber: time budget of %.1f minutes spent at step %d of %d: stopping early, so this "
                            "model depends on the machine's speed (--minutes 0: no cap)", config.max_minutes, step,
                            config.max_steps)
            break
    model.load_state_dict(best_state)
    model.eval()
    return {"best": best, "steps": step, "minutes": (time.monotonic() - started) / 60.0, "history": history,
            "stopped_by": "time" if out_of_time and step < config.max_steps else
            "patience" if bad_evaluations >= config.patience else "steps"}
