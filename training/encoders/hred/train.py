"""`python -m training pretrain`: BPE tokenizer + VHRED pre-training of ADEM's hierarchical encoder.

Seeded, with a fixed number of steps (not wall time), so that `make train` reproduces the artifact;
`--finish` turns a stopped run's last checkpoint into a finished run."""
from __future__ import annotations

import argparse
import json
import logging
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer

from training.core.cli import count, names_from, positive_float, positive_int, threads
from training.core.progress import Progress, setup_logging
from training.data import corpora, judgements
from training.data.keys import match_key
from training.encoders.hred import tokenizer as bpe
from training.encoders.hred.model import VHRED, VHREDConfig, load_checkpoint, save_checkpoint, weights_sha256

# What a run writes into --out; a new run removes the last run's first (see clear_outputs).
RUN_OUTPUTS = ("model.pt", "metrics.json", "tokenizer.json")
# What a step checkpoint records of its command line, so that `--finish` writes the stopped run's
# settings into metrics.json (seed and KL annealing are part of the identity `export` checks).
RUN_SETTINGS = ("seed", "kl_anneal_steps", "batch_size", "lr", "threads")
# ... and of the data it read, applied before `--finish` reads the data, so that metrics.json counts and
# fingerprints the data the run trained on, not the defaults'.
DATA_SETTINGS = ("sources", "max_dialogues", "eval_dialogues")


def config_overrides(text: str) -> dict:
    """argparse type of --config: a JSON object of VHREDConfig fields, checked before any data is
    read, so a bad one is a usage error, not a failure after the corpora load. `vocab_size` has its own
    option."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise argparse.ArgumentTypeError("must be a JSON object of VHREDConfig fields")
    known = set(VHREDConfig.__dataclass_fields__) - {"vocab_size"}
    unknown = sorted(set(raw) - known)
    if unknown:
        hint = " (vocab_size: use --vocab-size)" if "vocab_size" in unknown else ""
        raise argparse.ArgumentTypeError(f"unknown field(s) {', '.join(unknown)}{hint}; known: "
                                         f"{', '.join(sorted(known))}")
    try:
        VHREDConfig(**raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return raw


def clear_outputs(out: Path) -> None:
    """Remove the previous run's outputs from `out` before a new run writes there. An interrupted
    rerun otherwise left the new tokenizer or a new checkpoint next to the old metrics.json (and the
    old model.pt next to a new tokenizer), a folder `export` and `train adem` took as one run."""
    for name in RUN_OUTPUTS:
        (out / name).unlink(missing_ok=True)


def windows(dialogues: list[list[list[int]]], max_turns: int) -> list[list[list[int]]]:
    """Cut dialogues into consecutive windows of at most max_turns turns (>= 2), overlapping by one
    turn so that every turn after the first is predicted once, from up to max_turns - 1 turns."""
    if max_turns < 2:  # the step below would be 0 or negative: an endless loop
        raise ValueError(f"max_turns must be 2 or more, not {max_turns}")
    out = []
    for dialogue in dialogues:
        start = 0
        while start < len(dialogue) - 1:
            out.append(dialogue[start:start + max_turns])
            start += max_turns - 1
    return out


def collate(batch: list[list[list[int]]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Windows -> tokens [B, T, L], lengths [B, T] (0 for absent turns), turns [B]."""
    t = max(len(w) for w in batch)
    l = max(len(u) for w in batch for u in w)
    tokens = torch.zeros((len(batch), t, l), dtype=torch.long)
    lengths = torch.zeros((len(batch), t), dtype=torch.long)
    for i, window in enumerate(batch):
        for j, utterance in enumerate(window):
            tokens[i, j, :len(utterance)] = torch.tensor(utterance)
            lengths[i, j] = len(utterance)
    return tokens, lengths, torch.tensor([len(w) for w in batch])


def batches(items: list, size: int, rng: random.Random, pool: int = 50) -> list[list]:
    """Shuffled batches of windows of similar length (less padding), in shuffled order."""
    items = items[:]
    rng.shuffle(items)
    out = []
    for start in range(0, len(items), size * pool):
        chunk = sorted(items[start:start + size * pool], key=lambda w: (len(w), max(map(len, w))))
        out.extend(chunk[i:i + size] for i in range(0, len(chunk), size))
    rng.shuffle(out)
    return out


@torch.no_grad()
def perplexity(model: VHRED, data: list[list[list[int]]], batch_size: int = 64) -> dict[str, float]:
    """Per-token perplexity on held-out windows: of the ELBO bound (NLL + KL) and of the NLL alone."""
    model.eval()
    nll = kl = tokens = 0.0
    for start in range(0, len(data), batch_size):
        out = model(*collate(data[start:start + batch_size]), kl_weight=1.0, sample=True)
        nll += float(out["nll"])
        kl += float(out["kl"])
        tokens += float(out["tokens"])
    model.train()
    return {"ppl_bound": math.exp((nll + kl) / tokens), "ppl_nll": math.exp(nll / tokens),
            "kl_per_token": kl / tokens, "tokens": tokens}


@dataclass
class Corpus:
    """The dialogues a run reads: train (less those holding dev text) and DailyDialog validation (less
    the dialogues repeating a train one), with what was left out of each."""

    sources: tuple[str, ...]
    train: list[list[str]]
    valid: list[list[str]]
    left_out: dict[str, int]


def parse(argv: list[str]) -> argparse.Namespace:
    """The options; with --finish, the stopped run's files checked and the data settings it recorded
    taken over, so that the data is read as that run read it."""
    parser = argparse.ArgumentParser(prog="python -m training pretrain", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("runs/vhred"))
    parser.add_argument("--steps", type=positive_int, default=1300)
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--lr", type=positive_float, default=1e-3)
    parser.add_argument("--kl-anneal-steps", type=count, default=400,
                        help="KL weight rises linearly 0 -> 1 over these steps (paper: 60k batches)")
    parser.add_argument("--vocab-size", type=positive_int, default=5000)
    parser.add_argument("--sources", type=names_from(corpora.SOURCES), default="dailydialog,chitchat")
    parser.add_argument("--max-dialogues", type=count, default=0, help="cap per split (tests); 0: all")
    parser.add_argument("--eval-dialogues", type=count, default=0, help="cap on validation dialogues; 0: all")
    parser.add_argument("--seed", type=count, default=0)
    parser.add_argument("--threads", type=threads, default=1)
    parser.add_argument("--data-dir", type=Path, default=corpora.DEFAULT_DATA_DIR)
    parser.add_argument("--config", type=config_overrides, default="{}",
                        help="JSON object overriding VHREDConfig fields (tests: tiny sizes)")
    parser.add_argument("--checkpoint-every", type=positive_int, default=50,
                        help="save model.pt every N steps; the first k steps of a run equal a run with --steps k")
    parser.add_argument("--finish", action="store_true",
                        help="do not train: evaluate the saved model.pt and write metrics.json (after a stop)")
    args = parser.parse_args(argv)
    if not args.finish:
        return args
    if not (args.out / "model.pt").is_file():
        parser.error(f"--finish: {args.out / 'model.pt'} does not exist (nothing to finish)")
    if not (args.out / "tokenizer.json").is_file():
        # a new tokenizer would not be the one the saved model was trained on
        parser.error(f"--finish: {args.out / 'tokenizer.json'} does not exist; the saved model cannot be evaluated "
                     "without the tokenizer it was trained with: run it again")
    saved = load_checkpoint(args.out / "model.pt")[1]
    for name in DATA_SETTINGS if "steps_done" in saved else ():  # the stopped run's data, read as it read it
        if name in saved:
            value = saved[name]
            setattr(args, name, ",".join(value) if isinstance(value, list) else value)
    return args


def read_corpora(args: argparse.Namespace, log: logging.Logger) -> Corpus:
    sources = tuple(s for s in args.sources.split(",") if s)
    # Dialogues that hold a dev context or dev (query, reply) pair are left out (training/data/holdout.py).
    train, held = judgements.dev_holdout(args.data_dir).unseen(corpora.load_dialogues("train", sources, args.data_dir))
    # DailyDialog validation repeats some train dialogues up to spelling and punctuation: those are left out.
    valid = corpora.dailydialog("validation", args.data_dir)
    seen = {tuple(match_key(t) for t in d) for d in train}
    unseen = [d for d in valid if tuple(match_key(t) for t in d) not in seen]
    repeats, valid = len(valid) - len(unseen), unseen
    if args.max_dialogues:
        train = train[:args.max_dialogues]
    if args.eval_dialogues:
        valid = valid[:args.eval_dialogues]
    log.info("corpora: %d train dialogues (%s, %s; %d holding dev text left out), %d validation dialogues "
             "(dailydialog; %d repeating train left out)", len(train), ",".join(sources), corpora.fingerprint(train),
             held, len(valid), repeats)
    return Corpus(sources, train, valid, {"dev_text_dialogues_left_out": held, "validation_repeats_left_out": repeats})


def train_tokenizer(corpus: Corpus, config: VHREDConfig, out: Path, log: logging.Logger) -> Tokenizer:
    """A BPE tokenizer of the train dialogues, saved in `out`."""
    tokenizer = bpe.train_bpe((t for d in corpus.train for t in d), vocab_size=config.vocab_size,
                              max_tokens=config.max_tokens)
    bpe.save(tokenizer, out / "tokenizer.json")
    if tokenizer.get_vocab_size() != config.vocab_size:
        # below its alphabet BPE cannot go, and a small corpus may run out of merges before the size asked for
        log.warning("--vocab-size %d: the tokenizer has %d pieces (%s)", config.vocab_size,
                    tokenizer.get_vocab_size(), "its alphabet and special tokens are the least it can have"
                    if tokenizer.get_vocab_size() > config.vocab_size else "the corpus has no more merges")
    return tokenizer


def corpus_windows(tokenizer: Tokenizer, config: VHREDConfig, corpus: Corpus,
                   log: logging.Logger) -> tuple[list, list]:
    """Train and validation windows of token ids; `config` takes the tokenizer's vocabulary size."""
    config.vocab_size = tokenizer.get_vocab_size()
    log.info("tokenizer: %d BPE pieces, at most %d tokens per utterance", config.vocab_size, config.max_tokens)

    def encode_all(dialogues: list[list[str]]) -> list[list[list[int]]]:
        flat = bpe.encode(tokenizer, [t for d in dialogues for t in d])
        out, at = [], 0
        for d in dialogues:
            out.append(flat[at:at + len(d)])
            at += len(d)
        return out

    train_windows = windows(encode_all(corpus.train), config.max_turns)
    valid_windows = windows(encode_all(corpus.valid), config.max_turns)
    log.info("windows: %d train, %d validation", len(train_windows), len(valid_windows))
    return train_windows, valid_windows


def train_vhred(config: VHREDConfig, train_windows: list, args: argparse.Namespace, rng: random.Random,
                started: float, log: logging.Logger) -> tuple[VHRED, int]:
    """Adam over length-bucketed batches with linear KL annealing, a step checkpoint every
    --checkpoint-every steps; returns the model and the number of passes started."""
    model = VHRED(config)
    model.train()
    optimiser = torch.optim.Adam(model.parameters(), lr=args.lr)
    log.info("VHRED %s: %d parameters", config.to_dict(), sum(p.numel() for p in model.parameters()))

    progress = Progress(args.steps, "pretrain step", log, every=max(1, min(50, args.steps // 10)))
    schedule: list[list] = []
    epoch = 0
    running = {"loss": 0.0, "nll": 0.0, "kl": 0.0, "tokens": 0.0}
    for step in range(1, args.steps + 1):
        if not schedule:
            epoch += 1
            schedule = batches(train_windows, args.batch_size, rng)
        kl_weight = min(1.0, step / max(1, args.kl_anneal_steps))
        out = model(*collate(schedule.pop()), kl_weight=kl_weight)
        optimiser.zero_grad()
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        for key in ("nll", "kl", "tokens"):
            running[key] += float(out[key])
        if step % progress.every == 0 or step == args.steps:
            tokens = max(running["tokens"], 1.0)
            progress.step(step, epoch=epoch, kl_w=kl_weight, train_ppl=math.exp(running["nll"] / tokens),
                          kl_tok=running["kl"] / tokens)
            running = {"loss": 0.0, "nll": 0.0, "kl": 0.0, "tokens": 0.0}
        if step % args.checkpoint_every == 0 and step < args.steps:
            save_checkpoint(model, args.out / "model.pt", extra={
                "steps_done": step, "epoch": epoch, "minutes": round((time.time() - started) / 60, 1),
                **{name: getattr(args, name) for name in RUN_SETTINGS + DATA_SETTINGS}})
    return model, epoch


def pretrain(args: argparse.Namespace, corpus: Corpus, rng: random.Random, started: float,
             log: logging.Logger) -> int:
    """A new run: the previous run's files go (only now, with the data read and the config checked), then
    the tokenizer, the windows, the training and the run's metrics."""
    config = VHREDConfig(vocab_size=args.vocab_size, **args.config)
    clear_outputs(args.out)
    tokenizer = train_tokenizer(corpus, config, args.out, log)
    train_windows, valid_windows = corpus_windows(tokenizer, config, corpus, log)
    model, epoch = train_vhred(config, train_windows, args, rng, started, log)
    return write_run(model, valid_windows, corpus, train_windows, args, epoch, started, log)


def finish(args: argparse.Namespace, corpus: Corpus, started: float, log: logging.Logger) -> int:
    """--finish: the saved model.pt of a stopped run measured and written as a finished run, with the
    tokenizer it was trained with and the settings it recorded."""
    config = VHREDConfig(vocab_size=args.vocab_size, **args.config)
    tokenizer = bpe.load(args.out / "tokenizer.json")
    train_windows, valid_windows = corpus_windows(tokenizer, config, corpus, log)
    model, extra = load_checkpoint(args.out / "model.pt")
    args.steps, epoch = extra.get("steps_done", extra.get("steps")), extra.get("epoch", extra.get("epochs"))
    for name in RUN_SETTINGS:  # the stopped run's, not this command line's defaults
        if name in extra:
            setattr(args, name, extra[name])
    log.info("finishing a run stopped after step %d", args.steps)
    return write_run(model, valid_windows, corpus, train_windows, args, epoch, started, log, minutes=extra.get("minutes"))


def main(argv: list[str]) -> int:
    args = parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = setup_logging(args.out / "pretrain.log")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    started = time.time()
    corpus = read_corpora(args, log)
    return finish(args, corpus, started, log) if args.finish else pretrain(args, corpus, rng, started, log)


def write_run(model: VHRED, valid_windows: list, corpus: Corpus, train_windows: list, args: argparse.Namespace,
              epoch: int, started: float, log: logging.Logger, minutes: float | None = None) -> int:
    """Held-out perplexity, then model.pt (the checkpoint's `extra` is the metrics) and metrics.json."""
    held_out = perplexity(model, valid_windows)
    minutes = minutes if minutes is not None else (time.time() - started) / 60
    log.info("held-out DailyDialog validation: perplexity bound %.2f, NLL-only %.2f, KL/token %.3f (%d tokens)",
             held_out["ppl_bound"], held_out["ppl_nll"], held_out["kl_per_token"], held_out["tokens"])
    metrics = {"held_out_dailydialog_validation": held_out, "steps": args.steps, "epochs": epoch,
               "batch_size": args.batch_size, "seed": args.seed, "train_dialogues": len(corpus.train),
               "train_windows": len(train_windows), "train_fingerprint": corpora.fingerprint(corpus.train),
               "sources": list(corpus.sources), "minutes": round(minutes, 1), "threads": args.threads,
               "kl_anneal_steps": args.kl_anneal_steps, "lr": args.lr, **corpus.left_out,
               "weights_sha256": weights_sha256(model)}
    save_checkpoint(model, args.out / "model.pt", extra=metrics)
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    log.info("wrote %s in %.1f min", args.out, minutes)
    return 0
