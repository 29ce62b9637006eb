"""`python -m training train ruber`: train RUBER's unreferenced scorer by negative sampling, then export,
calibrate and card it (training/ruber/export.py); no human score is read."""
from __future__ import annotations

import argparse
import copy
import logging
import os
import platform
import random
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

import torch

from training.core.cli import (SetupError, at_least_two, count, nonnegative_float, output_dir, output_file,
                               positive_int, threads, without_figures)
from training.core.card import write_figures
from training.core.progress import Progress, setup_logging
from training.core.staging import staged_folder
from training.data.corpora import SOURCES, fingerprint, load_dialogues
from training.data.judgements import DEFAULT_DATA_DIR, SETS, TRAINING_SETS, dev_holdout
from training.ruber.data import Pairs, make_pairs, sample_pairs
from training.ruber.calibrate import load_glove
from training.ruber.export import calibrate_and_describe, export_graphs
from training.ruber.model import RuberConfig, UnreferencedScorer, build_glove_scorer, margin_loss

log = logging.getLogger("training.ruber")


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


def run(out: Path, store: Path, config: RuberConfig, train_config: TrainConfig, max_pairs: int | None,
        valid_pairs: int, choice_sets: list[str], card_sets: list[str], command: str,
        sources: tuple[str, ...] = ("dailydialog", "chitchat"), data_dir: Path = DEFAULT_DATA_DIR,
        calibration_contexts: int = 400) -> dict:
    torch.manual_seed(train_config.seed)
    glove = load_glove(store)
    started = time.monotonic()
    # Dialogues that hold a dev context or dev (query, reply) pair are left out (training/data/holdout.py).
    train_dialogues, held = dev_holdout(data_dir).unseen(load_dialogues("train", sources, data_dir))
    valid_dialogues = load_dialogues("validation", sources, data_dir)
    train = make_pairs(train_dialogues, glove, config.query_turns, config.max_words, max_pairs)
    valid = sample_pairs(make_pairs(valid_dialogues, glove, config.query_turns, config.max_words), valid_pairs,
                         train_config.seed)
    log.info("ruber: %d training pairs (%d dialogues holding dev text left out), %d validation pairs (%.0fs to "
             "prepare)", len(train), held, len(valid), time.monotonic() - started)
    model = build_glove_scorer(glove.vectors, config)
    history = train_unreferenced(model, train, valid, config.margin, train_config, log)

    out = Path(out)
    parity = export_graphs(model, out)
    summary = {
        "config": config.to_dict(), "train_config": train_config.to_dict(), "train": history, "parity": parity,
        "data": {"sources": list(sources), "train_pairs": len(train), "valid_pairs": len(valid),
                 "train_fingerprint": fingerprint(train_dialogues), "valid_fingerprint": fingerprint(valid_dialogues),
                 "dev_text_dialogues_left_out": held},
        "command": command, "machine": f"2-core {platform.machine()} CPU, no GPU", "date": str(date.today()),
        "threads": torch.get_num_threads(),
    }
    summary = calibrate_and_describe(out, store, glove, config, summary, train_dialogues, choice_sets, card_sets,
                                     data_dir, calibration_contexts)
    log.info("ruber: wrote %s in %.1f min", out, (time.monotonic() - started) / 60)
    return summary


def keep_failed_log(log_path: Path, error: BaseException) -> Path | None:
    """Copy a failed run's log out of its build folder, which staging removes, into the temporary
    folder: without --log it is the only record of why a long run failed."""
    if not log_path.is_file():
        return None
    kept = Path(tempfile.gettempdir()) / f"ruber-train-failed-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    log.error("ruber: the run failed (%s: %s); its log is kept in %s", type(error).__name__, error, kept)
    for handler in logging.getLogger().handlers:
        handler.flush()
    try:
        shutil.copyfile(log_path, kept)
    except OSError as exc:
        log.error("ruber: could not keep the log (%s)", exc.strerror or exc)
        return None
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training train ruber", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=output_dir, default=Path("model_store/ruber"))
    parser.add_argument("--store", type=Path, default=Path("model_store"), help="where glove-50d and baselines are")
    # The step and thread counts make a run reproducible (torch splits sums by thread), but only if the
    # time cap does not stop it first, so `make train` passes --minutes 0 (training.json: the committed run).
    parser.add_argument("--minutes", type=nonnegative_float, default=90.0,
                        help="safety cap on training time in minutes (default 90; 0: no cap, --max-steps alone "
                             "decides, as make train runs it); a cap that stops training logs a WARNING")
    parser.add_argument("--max-steps", type=positive_int, default=26000)
    parser.add_argument("--max-pairs", type=positive_int, default=None)
    parser.add_argument("--valid-pairs", type=positive_int, default=4000)
    parser.add_argument("--hidden", type=positive_int, default=128)
    parser.add_argument("--mlp-hidden", type=positive_int, default=128)
    parser.add_argument("--batch-size", type=at_least_two, default=128, help="2 or more: the negatives are the "
                        "batch's other replies")
    parser.add_argument("--eval-every", type=positive_int, default=500)
    parser.add_argument("--seed", type=count, default=13)
    parser.add_argument("--threads", type=threads, default=2)
    parser.add_argument("--sources", nargs="+", default=["dailydialog", "chitchat"], choices=list(SOURCES))
    parser.add_argument("--choice-sets", nargs="+", default=list(TRAINING_SETS), choices=list(SETS))
    parser.add_argument("--card-sets", nargs="+", default=list(TRAINING_SETS), choices=list(SETS))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--log", type=output_file, default=None,
                        help="log file (default: train.log in --out, and a failed run's copy in the temporary folder; "
                             "make train: runs/ruber-train.log)")
    parser.add_argument("--figures", type=output_dir, default=None,
                        help="also write the card's figures that the store lacks here (make train: docs/cards)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = RuberConfig(hidden=args.hidden, mlp_hidden=args.mlp_hidden)
    train_config = TrainConfig(batch_size=args.batch_size, max_steps=args.max_steps, max_minutes=args.minutes or None,
                               eval_every=args.eval_every, seed=args.seed)
    command = "python -m training train ruber " + " ".join(without_figures(argv if argv is not None else []))
    # Built beside --out and swapped in at the end (training/core/staging.py): a run that fails or is
    # stopped leaves the store folder as it was.
    if args.log and args.out.resolve() in args.log.resolve().parents:
        parser.error(f"--log {args.log}: inside --out, which is replaced whole at the end; put it elsewhere or "
                     "leave it out (the log then goes into --out with the model)")
    with staged_folder(args.out, "ruber") as stage:
        # In the building folder, so that it is published with the model.
        log_path = args.log or stage / "train.log"
        setup_logging(log_path)
        try:
            run(stage, args.store, config, train_config, args.max_pairs, args.valid_pairs, args.choice_sets,
                args.card_sets, command.strip(), tuple(args.sources), args.data_dir)
        except BaseException as exc:
            if args.log is None:  # the build, log and all, is about to be removed
                keep_failed_log(log_path, exc)
            raise
    write_figures(args.figures, "ruber", {"torch": torch.__version__})
    log.info("ruber: published %s", args.out)
    return 0
