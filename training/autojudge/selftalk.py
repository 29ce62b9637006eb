"""`python -m training selftalk`: the pre-trained VHRED talks to itself (AutoJudge's data generation).

Contexts come from a split the model was not trained on, less those whose turns occur in DailyDialog
train; each generated turn reads the whole conversation so far. One JSON object per line."""
from __future__ import annotations

import argparse
import json
import logging
import random
import time
from pathlib import Path

import torch

from training.core.cli import SetupError, count, positive_float, positive_int
from training.core.progress import Progress, setup_logging
from training.data import corpora
from training.data.holdout import DevHoldout
from training.encoders.hred import tokenizer as bpe
from training.encoders.hred.encoder import HREDTextEncoder
from training.encoders.hred.model import load_finished

log = logging.getLogger("training.selftalk")


def self_talk(encoder: HREDTextEncoder, contexts: list[list[str]], turns: int, temperature: float = 1.0,
              top_k: int = 50, seed: int = 0) -> list[list[str]]:
    """For each context, `turns` generated utterances (decoded text), in batches over contexts."""
    generator = torch.Generator().manual_seed(seed)
    model, tokenizer = encoder.model, encoder.tokenizer
    dialogues = [list(c) for c in contexts]
    generated: list[list[str]] = [[] for _ in contexts]
    for _ in range(turns):
        states = torch.as_tensor(encoder.encode_contexts(dialogues))
        ids = model.generate(states, model.config.max_tokens, temperature=temperature, top_k=top_k,
                             generator=generator)
        for i, seq in enumerate(ids):
            text = tokenizer.decode(seq).strip()
            generated[i].append(text)
            dialogues[i].append(text)
    return generated


def unseen_contexts(dialogues: list[list[str]], train: list[list[str]], context_turns: int
                    ) -> tuple[list[list[str]], int]:
    """The dialogues long enough for a context whose first `context_turns` turns do not hold two
    consecutive turns of a train dialogue (by the loose key, training/data/holdout.py's rule, so a
    respelled copy counts); and how many long-enough dialogues that left out."""
    read = DevHoldout.of((d[:i], d[i], False) for d in train for i in range(1, len(d)))
    long_enough = [d for d in dialogues if len(d) >= context_turns]
    kept = [d for d in long_enough if not read.touches(d[:context_turns])]
    return kept, len(long_enough) - len(kept)


def pick_contexts(available: int, wanted: int, rng: random.Random, where: str) -> list[int]:
    """Indices of `wanted` contexts out of `available`, sorted; all of them, with a warning, when
    fewer are available; none is a set-up error (an empty file is no result)."""
    if not available:
        raise SetupError(f"{where} has no unseen context of that many turns (--context-turns): nothing to generate")
    if wanted > available:
        log.warning("--contexts %d: %s has only %d unseen contexts; generating %d", wanted, where, available,
                    available)
    return sorted(rng.sample(range(available), min(wanted, available)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m training selftalk", description=__doc__)
    parser.add_argument("--model", type=Path, default=Path("runs/vhred"), help="pre-training run folder")
    parser.add_argument("--out", type=Path, default=Path("runs/selftalk.jsonl"))
    parser.add_argument("--contexts", type=positive_int, default=100, help="how many contexts (the paper: 100)")
    parser.add_argument("--context-turns", type=positive_int, default=2)
    parser.add_argument("--turns", type=positive_int, default=10, help="generated turns per dialogue (the paper: 10)")
    parser.add_argument("--split", default="test", choices=["validation", "test"])
    parser.add_argument("--temperature", type=positive_float, default=1.0)
    parser.add_argument("--top-k", type=count, default=50)
    parser.add_argument("--batch", type=positive_int, default=25)
    parser.add_argument("--seed", type=count, default=0)
    parser.add_argument("--data-dir", type=Path, default=corpora.DEFAULT_DATA_DIR)
    args = parser.parse_args(argv)
    log_path = args.out.with_suffix(".log")
    if log_path == args.out:  # --out x.log: the log lines went into the JSONL
        log_path = args.out.with_name(args.out.name + ".log")
    log = setup_logging(log_path)
    torch.set_num_threads(1)
    model, _ = load_finished(args.model)
    encoder = HREDTextEncoder(model, bpe.load(args.model / "tokenizer.json"))
    rng = random.Random(args.seed)
    pool, seen = unseen_contexts(corpora.dailydialog(args.split, args.data_dir),
                                 corpora.dailydialog("train", args.data_dir), args.context_turns)
    log.info("DailyDialog %s: %d dialogues with %d turns or more whose context was not read in training "
             "(%d left out)", args.split, len(pool), args.context_turns, seen)
    picked = pick_contexts(len(pool), args.contexts, rng, f"DailyDialog {args.split}")
    contexts = [pool[i][:args.context_turns] for i in picked]
    log.info("self-talk: %d contexts from DailyDialog %s, %d turns each", len(contexts), args.split, args.turns)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    progress = Progress(len(contexts), "selftalk dialogues", log, every=1)
    started = time.time()
    with open(args.out, "w", encoding="utf-8") as handle:
        for start in range(0, len(contexts), args.batch):
            batch = contexts[start:start + args.batch]
            generated = self_talk(encoder, batch, args.turns, args.temperature, args.top_k, args.seed + start)
            for offset, (context, turns) in enumerate(zip(batch, generated)):
                record = {"id": f"dailydialog-{args.split}-{picked[start + offset]}",
                          "source": f"dailydialog/{args.split}", "context": context, "generated": turns}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            progress.step(start + len(batch))
    log.info("wrote %s in %.0fs", args.out, time.time() - started)
    return 0
