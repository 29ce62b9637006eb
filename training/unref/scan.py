"""`python -m training unref-scan`: which vector and text signals a stacked recipe should combine, chosen
without a development item. Every subset of the candidates that keeps the first one is fitted by the stacker
at each of its settings and measured by leave-one-set-out on the recipe's judged train partitions; the table
lists each subset's best setting, highest LOSO Pearson first (with --negatives, first those that order
enough of them). Without --negatives no margin term is fitted;
with them every setting of train-unref's search is, and a subset's best setting is the one train-unref would
choose (the floor on each kind of negative ordered). The -commercial models serve the top subset of
`--negatives dstc7-degenerate`."""
from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.core.cli import positive_int
from training.core.turn_training import Config
from training.encoders.minilm.embed import EmbeddingCache
from training.unref import fit as stacker
from training.unref.heads import GROUPS
from training.unref.recipes import (DEGENERATE_AND_SHUFFLED, MINILM, MPNET, RECIPES, TEXT, copied_bigrams,
                                    copied_words, copy_excess, cos_mean, repeated_bigrams)
from training.unref.signals import matrix
from training.unref.train import Rows, default_cache


def candidates(encoder: str) -> dict[str, dict]:
    """The signals a subset is drawn from, the vector ones on `encoder`'s vectors."""
    specs = (cos_mean(encoder, 1), cos_mean(encoder, 2), cos_mean(encoder, 5), copy_excess(encoder), *TEXT,
             copied_bigrams(), copied_words(), repeated_bigrams())
    return {spec["name"]: spec for spec in specs}


CANDIDATE_NAMES = tuple(candidates(MINILM))  # the same names on every encoder
SETTINGS = {**stacker.SEARCH, "rank": (0.0,)}  # no negative samples: the margin term's weight changes nothing


@dataclass(frozen=True)
class Negatives:
    """The negative samples' signals (good and bad replies, the same columns as X) and their kinds."""

    good: np.ndarray
    bad: np.ndarray
    kinds: list[str]


def scan(X: np.ndarray, human: np.ndarray, sets: np.ndarray, contexts: np.ndarray, names: list[str],
         search: dict[str, tuple] = SETTINGS, negatives: Negatives | None = None,
         ) -> list[tuple[tuple[str, ...], stacker.Trial]]:
    """(subset, its best trial) for every subset of the columns that holds column 0, best first; with
    `negatives`, the trial stacker.choose takes (each trial's whole fit measured on them), and the subsets
    whose trial orders NEGATIVES_FLOOR of each kind before those that do not."""
    groups = np.array([GROUPS[s] for s in sets])
    found = []
    for size in range(len(names)):
        for extra in itertools.combinations(range(1, len(names)), size):
            columns = [0, *extra]
            chosen = [names[c] for c in columns]
            if negatives is None:
                trials = [stacker.leave_one_set_out(X[:, columns], human, sets, groups, contexts, chosen, setting)
                          for setting in stacker.settings(search)]
                found.append((tuple(chosen), max(trials, key=lambda t: t.loso_pearson)))
                continue
            good, bad = negatives.good[:, columns], negatives.bad[:, columns]
            trials = []
            for setting in stacker.settings(search):
                trial = stacker.leave_one_set_out(X[:, columns], human, sets, groups, contexts, chosen, setting,
                                                  good, bad)
                whole = stacker.fit(X[:, columns], human, sets, chosen, setting, good, bad)
                trial.negatives_ordered = stacker.negatives_ordered(whole(good), whole(bad), negatives.kinds)
                trials.append(trial)
            found.append((tuple(chosen), stacker.choose(trials)))

    def rank(row: tuple[tuple[str, ...], stacker.Trial]) -> tuple[bool, float]:
        ordered = row[1].negatives_ordered
        return ordered is not None and ordered < stacker.NEGATIVES_FLOOR, -row[1].loso_pearson

    return sorted(found, key=rank)


def table(found: list[tuple[tuple[str, ...], stacker.Trial]]) -> str:
    lines = ["| signals | LOSO r | worst group | LOSO pairwise | lambda | target | weighting | signed | rank | "
             "negatives ordered |", "|---|---|---|---|---|---|---|---|---|---|"]
    for chosen, trial in found:
        s = trial.setting
        pairwise = "–" if trial.loso_pairwise is None else f"{trial.loso_pairwise:.4f}"
        ordered = "–" if trial.negatives_ordered is None else f"{trial.negatives_ordered:.4f}"
        lines.append(f"| {', '.join(chosen)} | {trial.loso_pearson:.4f} | {trial.loso_worst:.4f} | {pairwise} | "
                     f"{s.lam:g} | {s.target} | {s.weighting} | {s.nonneg} | {s.rank:g} | {ordered} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(argv if argv is not None else sys.argv[2:])
    parser = argparse.ArgumentParser(prog="python -m training unref-scan", description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=sorted(RECIPES), default="unref-minilm-commercial",
                        help="the recipe whose judged train partitions are read")
    parser.add_argument("--encoder", choices=(MINILM, MPNET), default=MINILM, help="the vector signals' encoder")
    parser.add_argument("--signals", nargs="+", choices=CANDIDATE_NAMES, default=list(CANDIDATE_NAMES),
                        help="candidates, the first kept in every subset")
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--cache", type=Path, default=None, help="the encoder's embedding cache (train-unref's default)")
    parser.add_argument("--negatives", choices=("dstc7-copies", "dstc7-degenerate", DEGENERATE_AND_SHUFFLED), default=None,
                        help="fit the margin term on these negatives (train-unref's), each setting of its search, and "
                             "take each subset's setting as train-unref would (its floor on each kind ordered)")
    parser.add_argument("--max-judged", type=positive_int, default=None, help="tests: judged train items per set")
    parser.add_argument("--negatives-contexts", type=positive_int, default=None, help="tests: negative-sample contexts")
    args = parser.parse_args(argv)
    if len(set(args.signals)) != len(args.signals):
        parser.error("--signals: name each signal once")
    recipe = RECIPES[args.model]
    config = Config() if args.negatives_contexts is None else Config(negatives_contexts=args.negatives_contexts)
    rows = Rows.load(args.max_judged, config, 0, recipe.rated_sets, args.negatives or "none")
    cache = EmbeddingCache(args.cache or default_cache(args.encoder), encoder_folder=args.store / args.encoder)
    specs = tuple(candidates(args.encoder)[name] for name in args.signals)
    caches = {args.encoder: cache}
    X = matrix(specs, caches, rows.contexts, rows.replies, {})
    negatives, search = None, SETTINGS
    if rows.negatives is not None:
        found = rows.negatives
        negatives = Negatives(matrix(specs, caches, found.contexts, found.good, {}),
                              matrix(specs, caches, found.contexts, found.bad, {}), found.kinds)
        search = stacker.SEARCH
    print(f"{len(rows.replies)} judged train items of {', '.join(recipe.rated_sets)}; "
          f"{2 ** (len(specs) - 1)} subsets x {len(stacker.settings(search))} settings", flush=True)
    print(table(scan(X, rows.human, rows.sets, rows.contexts_of, list(args.signals), search, negatives)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
