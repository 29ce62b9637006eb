"""`python -m training train-unref`: the stacked reference-free models, from real data.

For each model (training/unref/recipes.py): its head signals on the judged train partitions out of fold
(heads.py), its other signals from the embedding caches (signals.py), the stacker's settings chosen by
leave-one-set-out over the training sets with a floor on the train negative samples ordered (fit.py;
no development item is read), the whole fit exported with its card (export.py). `evaluate` and
`degenerate` then measure the served folders on the development sets.
"""
from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from service.scorers.base import Item
from training.core.card import write_figures
from training.core.cli import count, output_dir, positive_int, without_figures
from training.core.progress import cpu_description
from training.core.staging import check_replaceable, staged_folder
from training.evaluation.pairwise import context_groups
from training.data.negatives import dstc7_copies, judged, negative_samples
from training.encoders.minilm.embed import DEFAULT_CACHE, EmbeddingCache
from training.core.turn_training import Config
from training.train_minilm import train
from training.unref import fit as stacker
from training.unref.card import card, card_figures
from training.unref.export import SCORER, check_served, served_config, write_heads, write_model
from training.unref.heads import GROUPS, OnnxHead, out_of_fold, outputs, recipe_config
from training.unref.recipes import (DEGENERATE_AND_SHUFFLED, MINILM, RECIPES, SAMPLES_DEGENERATE_AND_SHUFFLED,
                                    HeadSource, Recipe)
from training.unref.signals import matrix

OUTPUT = {"autojudge-minilm": "score", "ruber-minilm": "s_unref"}
SEARCH_SHOWN = 12  # settings of the search kept in the card
CHECKED_ROWS = 64  # train rows the exported folder must score as the fit does


@dataclasses.dataclass
class Rows:
    """The judged train partitions (every training set) and the negative samples the margin term reads."""

    contexts: list[list[str]]
    replies: list[str]
    human: np.ndarray
    sets: np.ndarray
    contexts_of: np.ndarray  # context group ids, for pairwise agreement
    per_set: dict[str, tuple[list[list[str]], list[str]]]
    negatives: Any  # training.data.negatives.Ranked, or None where the recipe's stacker reads none (Recipe.negatives)

    @classmethod
    def load(cls, limit: int | None, negatives: Config, seed: int, sets: tuple[str, ...] = tuple(GROUPS),
             negatives_from: str = "samples") -> "Rows":
        items = {name: rows[:limit] for name, rows in judged("train", sets).items()}
        flat = [item for rows in items.values() for item in rows]
        return cls([list(i.context) for i in flat], [i.response for i in flat], np.array([i.score for i in flat]),
                   np.array([i.set for i in flat]),
                   context_groups([(i.conversation, tuple(i.context)) for i in flat]),
                   {name: ([list(i.context) for i in rows], [i.response for i in rows]) for name, rows in items.items()},
                   negatives_of(negatives_from, negatives, seed))


def negatives_of(source: str, config: Config, seed: int) -> Any:
    """The negative samples a recipe's margin term reads (Recipe.negatives); None for "none"."""
    if source == "samples":
        return negative_samples(config, random.Random(seed), for_ruber=False)
    if source in ("dstc7-copies", "dstc7-degenerate", DEGENERATE_AND_SHUFFLED):
        return dstc7_copies(config.negatives_contexts, random.Random(seed), repetitions=source != "dstc7-copies",
                            shuffled=source == DEGENERATE_AND_SHUFFLED)
    if source == SAMPLES_DEGENERATE_AND_SHUFFLED:  # each part drawn as its own source is, with the same seed
        return negatives_of("samples", config, seed).joined(negatives_of(DEGENERATE_AND_SHUFFLED, config, seed),
                                                            "samples")
    if source == "none":
        return None
    raise ValueError(f"unknown negatives {source!r}: samples, dstc7-copies, dstc7-degenerate, "
                     f"{DEGENERATE_AND_SHUFFLED}, {SAMPLES_DEGENERATE_AND_SHUFFLED} or none")


class Heads:
    """Each head a recipe reads, trained or opened once, and its outputs on the rows."""

    def __init__(self, store: Path, caches: dict[str, EmbeddingCache], overrides: dict[str, Any], log=print,
                 served_next_turn: bool = False) -> None:
        self.store, self.caches, self.overrides, self.log = store, caches, overrides, log
        self.served_next_turn = served_next_turn
        self.full: dict[HeadSource, Any] = {}
        self.train_outputs: dict[HeadSource, np.ndarray] = {}

    def config(self, source: HeadSource) -> Config:
        return dataclasses.replace(recipe_config(source, self.store, self.served_next_turn), **self.overrides)

    def whole_fit(self, source: HeadSource) -> Any:
        if source not in self.full:
            if source.served:
                self.full[source] = OnnxHead(self.store / source.model / "head.onnx")
            else:
                started = time.time()
                self.full[source] = train(self.config(source), self.caches[source.encoder], log=self.log).eval()
                self.log(f"{source.model}'s form on {source.encoder}: trained in {time.time() - started:.0f} s")
        return self.full[source]

    def on(self, source: HeadSource, contexts: list[list[str]], replies: list[str]) -> np.ndarray:
        return outputs(self.whole_fit(source), self.caches[source.encoder], contexts, replies, OUTPUT[source.model])

    def on_train(self, source: HeadSource, rows: Rows) -> np.ndarray:
        """The head's outputs on the train rows: out of fold for a head fitted to ratings."""
        if source not in self.train_outputs:
            if source.rated:
                per_set = out_of_fold(self.config(source), self.caches[source.encoder], rows.per_set,
                                      OUTPUT[source.model], log=self.log)
            else:
                per_set = {name: self.on(source, *part) for name, part in rows.per_set.items()}
            self.train_outputs[source] = np.concatenate([per_set[name] for name in rows.per_set])
        return self.train_outputs[source]


def signals(recipe: Recipe, heads: Heads, rows: Rows) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The train rows' signals (head signals out of fold) and the negative samples' (good, bad), None without."""
    negatives = rows.negatives

    def at(contexts, replies, train_rows: bool) -> np.ndarray:
        values = {file: {OUTPUT[s.model]: heads.on_train(s, rows) if train_rows else heads.on(s, contexts, replies)}
                  for file, s in recipe.heads.items()}
        return matrix(recipe.signals, heads.caches, contexts, replies, values)

    if negatives is None:
        return at(rows.contexts, rows.replies, True), None, None
    return (at(rows.contexts, rows.replies, True), at(negatives.contexts, negatives.good, False),
            at(negatives.contexts, negatives.bad, False))


def search(X, rows: Rows, names: list[str], good, bad, one_setting: bool,
           log: Callable[[str], None] = print) -> list[stacker.Trial]:
    """Every setting's leave-one-set-out trial, best first; with negatives, the share the whole fit orders
    (of the kind it orders least, where the negatives name kinds)."""
    groups = np.array([GROUPS[s] for s in rows.sets])
    trials = []
    # Without negative samples the margin term's weight changes nothing: its settings are not searched.
    search_space = stacker.SEARCH if good is not None else {**stacker.SEARCH, "rank": (0.0,)}
    for setting in [stacker.Setting(rank=1.0 if good is not None else 0.0)] if one_setting else stacker.settings(
            search_space):
        trial = stacker.leave_one_set_out(X, rows.human, rows.sets, groups, rows.contexts_of, names, setting, good, bad)
        if good is not None:
            whole = stacker.fit(X, rows.human, rows.sets, names, setting, good, bad)
            trial.negatives_ordered = stacker.negatives_ordered(whole(good), whole(bad), rows.negatives.kinds)
        trials.append(trial)
    trials.sort(key=lambda t: -t.loso_pearson)
    for trial in trials[:5]:
        log(f"  {trial.setting}: LOSO r {trial.loso_pearson:.4f} (worst {trial.loso_worst:.4f}), pairwise "
            f"{trial.loso_pairwise}, negatives ordered {stacker.figure(trial.negatives_ordered)}")
    return trials


def parse_caches(values: list[str]) -> dict[str, Path]:
    out = {}
    for value in values:
        name, _, folder = value.partition("=")
        if not folder:
            raise argparse.ArgumentTypeError(f"--cache {value!r}: write ENCODER=FOLDER")
        out[name] = Path(folder)
    return out


def default_cache(encoder: str) -> Path:
    """MiniLM's cache is train-minilm's (DIALSCORE_MINILM_CACHE); another encoder's sits beside it."""
    return DEFAULT_CACHE if encoder == MINILM else DEFAULT_CACHE.with_name(f"dialscore-{encoder}-cache")


def main(argv: list[str] | None = None) -> int:
    argv = list(argv if argv is not None else sys.argv[2:])
    parser = argparse.ArgumentParser(prog="python -m training train-unref", description=__doc__.split("\n")[0])
    parser.add_argument("--model", nargs="+", choices=sorted(RECIPES), default=["unref-minilm"])
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--cache", action="append", default=[], metavar="ENCODER=FOLDER",
                        help="embedding cache of an encoder (default: train-minilm's for minilm-l6, "
                             "dialscore-ENCODER-cache beside it for another)")
    parser.add_argument("--one-setting", action="store_true",
                        help="fit the default setting only, without the leave-one-set-out search (tests)")
    parser.add_argument("--max-judged", type=positive_int, default=None, help="tests: judged train items per set")
    parser.add_argument("--epochs", type=positive_int, default=None, help="tests: every head's epochs")
    parser.add_argument("--negatives-contexts", type=positive_int, default=None, help="tests: negative-sample contexts")
    parser.add_argument("--next-turn-max-pairs", type=positive_int, default=None, help="tests: next-turn pairs")
    parser.add_argument("--ruber-pairs", type=positive_int, default=None, help="tests: RUBER's negative-sampling pairs")
    parser.add_argument("--served-next-turn", action="store_true",
                        help="out-of-fold heads of a served model pre-train M on its own 168k next turns (177k texts "
                             "to encode) rather than on RUBER's ~10k negative-sampling pairs")
    parser.add_argument("--figures", type=output_dir, default=None,
                        help="also write each card's figures here (make train: docs/cards)")
    parser.add_argument("--seed", type=count, default=0)
    args = parser.parse_args(argv)
    try:
        folders = parse_caches(args.cache)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    recipes = [RECIPES[name] for name in args.model]
    for recipe in recipes:
        check_replaceable(args.store / recipe.name, SCORER)  # before the training, not after it
    torch.set_num_threads(1)
    started = time.time()
    overrides = {k: v for k, v in (("max_judged", args.max_judged), ("epochs", args.epochs),
                                   ("negatives_contexts", args.negatives_contexts),
                                   ("next_turn_max_pairs", args.next_turn_max_pairs),
                                   ("ruber_pairs", args.ruber_pairs)) if v is not None}
    encoders = sorted({e for recipe in recipes for e in recipe.uses})
    caches = {e: EmbeddingCache(folders.get(e, default_cache(e)), encoder_folder=args.store / e) for e in encoders}
    negatives_config = dataclasses.replace(Config(seed=args.seed), **overrides)
    heads = Heads(args.store, caches, overrides, served_next_turn=args.served_next_turn)
    loaded: dict[tuple, Rows] = {}
    for recipe in recipes:
        key = (recipe.rated_sets, recipe.negatives)
        if key not in loaded:
            loaded[key] = Rows.load(args.max_judged, negatives_config, args.seed, recipe.rated_sets, recipe.negatives)
        rows = loaded[key]
        print(f"{recipe.name}: {len(rows.replies)} judged train items of {', '.join(recipe.rated_sets)}, "
              f"{len(rows.negatives.good) if rows.negatives else 0} negative samples", flush=True)
        names = [spec["name"] for spec in recipe.signals]
        X, good, bad = signals(recipe, heads, rows)
        print(f"{recipe.name}: signals {names}; leave-one-set-out search", flush=True)
        trials = search(X, rows, names, good, bad, args.one_setting)
        best = stacker.choose(trials)
        model = stacker.fit(X, rows.human, rows.sets, names, best.setting, good, bad)
        print(f"{recipe.name}: chosen {best.setting}, LOSO r {best.loso_pearson:.4f}; weights on z "
              + ", ".join(f"{n} {w:+.4f}" for n, w in zip(names, model.weight)) + f"; bias {model.bias:.4f}", flush=True)
        check = list(range(0, len(rows.replies), max(1, len(rows.replies) // CHECKED_ROWS)))[:CHECKED_ROWS]
        contexts, replies = [rows.contexts[i] for i in check], [rows.replies[i] for i in check]
        whole = matrix(recipe.signals, caches, contexts, replies,
                       {file: {OUTPUT[s.model]: heads.on(s, contexts, replies)} for file, s in recipe.heads.items()})
        trained = {file: heads.whole_fit(s) for file, s in recipe.heads.items() if not s.served}
        with staged_folder(args.store / recipe.name, SCORER) as stage:
            provenance = write_heads(recipe, trained, args.store, stage)
            fit = {"chosen": best.as_dict(), "settings_tried": len(trials),
                   "search": [t.as_dict() for t in trials[:SEARCH_SHOWN]]}
            run = {"seconds": round(time.time() - started), "machine": cpu_description(), "argv": without_figures(argv)}
            write_model(stage, recipe, served_config(recipe, model, provenance, args.store),
                        card(card_figures(recipe, fit, **run)))
            write_figures(args.figures, recipe.name, run)
            worst = check_served(stage, args.store, [Item(c, r) for c, r in zip(contexts, replies)], model(whole))
        print(f"exported {args.store / recipe.name} (served scores within {worst:.1e} of the fit's)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
