"""`python -m training selfplay`: a bot's quality from conversations it holds with itself (Ghandeharioun
et al. 2019, section 4.3).

Each conversation opens with a DailyDialog validation utterance; the bot's replies are scored with M_H's
self-play variant and averaged, with a percentile bootstrap interval. Failed conversations are dropped
and counted."""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from service.scorers.base import Dialogue, Turn
from service.store.model_store import ModelStore
from training.core.cli import SetupError, count, output_file, positive_float, positive_int
from training.data import corpora
from training.mh.bots import Bot, BotError, make_bot
from training.mh.card import TEMPLATES as CARDS
from training.mh.report import SELFPLAY_BEGIN, write_selfplay_docs


def openers(count: int, seed: int, data_dir: Path | None = None) -> list[str]:
    """First utterances of `count` random DailyDialog validation dialogues (seeded)."""
    dialogues = corpora.dailydialog("validation", data_dir or corpora.DEFAULT_DATA_DIR)
    firsts = [d[0] for d in dialogues if d and d[0].strip()]
    rng = random.Random(seed)
    return [rng.choice(firsts) for _ in range(count)]


def converse(bot: Bot, opener: str, turns: int) -> list[str]:
    """The bot's `turns` replies, each to the whole conversation so far (opener included)."""
    history = [opener]
    for _ in range(turns):
        history.append(bot.reply(history))
    return history[1:]


def interval(scores: list[float], confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; a single score or identical scores give a point."""
    values = np.asarray(scores, dtype=np.float64)
    if len(values) < 2 or np.ptp(values) == 0:
        return float(values.mean()), float(values.mean())
    result = stats.bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=2000,
                             method="percentile", random_state=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def selfplay(bot: Bot, scorer: Any, seeds: list[str], turns: int, max_failures: int,
             log: Callable[[str], None] = print) -> dict[str, Any]:
    """Hold one conversation per seed, score each with M_H self-play; failures are counted, not fatal."""
    conversations: list[dict[str, Any]] = []
    failures: list[str] = []
    started = time.time()
    for n, opener in enumerate(seeds, 1):
        try:
            replies = converse(bot, opener, turns)
        except BotError as exc:
            failures.append(str(exc))
            log(f"conversation {n}: {exc}")
            if len(failures) >= max_failures:
                log(f"stopping after {len(failures)} failed conversations")
                break
            continue
        score = scorer.score([Dialogue([Turn("bot", text) for text in replies])], {"variant": "self-play"}).scores[0]
        conversations.append({"opener": opener, "replies": replies, "mh": score})
        if n % 10 == 0 or n == len(seeds):
            log(f"{n}/{len(seeds)} conversations, {time.time() - started:.0f} s")
    scores = [c["mh"] for c in conversations]
    summary: dict[str, Any] = {"bot": bot.name, "conversations": len(conversations), "turns": turns,
                               "failed": len(failures), "errors": failures[:10]}
    if scores:
        low, high = interval(scores)
        summary.update(mean=float(np.mean(scores)), ci95=[low, high], sd=float(np.std(scores, ddof=1))
                       if len(scores) > 1 else 0.0)
    summary["seconds"] = time.time() - started
    return {"summary": summary, "conversations": conversations}


def load_scorer(store: Path) -> Any:
    """The store's mh scorer; a store without one is a set-up error (exit 2) named before the store
    loads, whose log lines speak to a server's operator ("clients are told ...")."""
    if not (Path(store) / "mh" / "manifest.json").is_file():
        raise SetupError(f"--store {store}: no mh model there ({Path(store) / 'mh' / 'manifest.json'} is missing)")
    models = ModelStore(store, models=("mh",))
    models.load()
    scorer = models.get("mh")
    if scorer is None:
        raise SetupError(f"mh is not servable from {store}: {models.failures.get('mh', models.failures)}")
    return scorer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training selfplay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bot", required=True,
                        help="'vhred', 'scripted:laugh-echo' or 'scripted:repeat' (bots that game M_H, for its "
                             "limitations), or the URL of a bot speaking the adapter's contract")
    parser.add_argument("--conversations", type=positive_int, default=100)
    parser.add_argument("--turns", type=positive_int, default=10)
    parser.add_argument("--timeout", type=positive_float, default=10.0, help="seconds per reply (HTTP bots)")
    parser.add_argument("--max-failures", type=count, default=5, help="stop after this many failed conversations")
    parser.add_argument("--seed", type=count, default=0)
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--vhred", type=Path, default=Path("runs/vhred"), help="VHRED run folder (model.pt)")
    parser.add_argument("--out", type=output_file, help="write the conversations and their scores here (JSON)")
    parser.add_argument("--docs", type=Path,
                        help="record the result as a row of the self-play table in this evaluation page")
    args = parser.parse_args(argv)
    if args.conversations < 1 or args.turns < 1:
        parser.error("--conversations and --turns must be at least 1")
    scorer = load_scorer(args.store)
    try:
        bot = make_bot(args.bot, args.timeout, args.vhred, args.seed)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.docs:  # checked now: the block is filled in only after every conversation was played
        if not args.docs.is_file() or SELFPLAY_BEGIN not in args.docs.read_text(encoding="utf-8"):
            print(f"error: {args.docs} has no {SELFPLAY_BEGIN} block: run `python -m training train-mh` first",
                  file=sys.stderr)
            return 2
    result = selfplay(bot, scorer, openers(args.conversations, args.seed), args.turns, args.max_failures,
                      log=lambda m: print(m, file=sys.stderr, flush=True))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    s = result["summary"]
    if not s["conversations"]:
        print(f"{s['bot']}: no conversation completed ({s['failed']} failed): {s['errors'][:1]}")
        return 1
    if args.docs:
        command = "python -m training selfplay " + " ".join(sys.argv[1:] if argv is None else argv)
        write_selfplay_docs(args.docs, {s["bot"]: (
            f"| {s['bot']} | {s['mean']:.3f} | {s['ci95'][0]:.3f}..{s['ci95'][1]:.3f} | {s['conversations']} x "
            f"{s['turns']} | {s['failed']} | `{command}` ({s['seconds']:.0f} s, {CARDS.phrase('machine')}) |")})
    print(f"{s['bot']}: M_H self-play (-B/B) = {s['mean']:.3f} (95% bootstrap CI {s['ci95'][0]:.3f}.."
          f"{s['ci95'][1]:.3f}) over {s['conversations']} conversations of {s['turns']} turns; "
          f"{s['failed']} failed; {s['seconds']:.0f} s")
    return 0
