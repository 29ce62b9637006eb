"""`python -m training unref-scan`: which vector and text signals a stacked recipe should combine, chosen
without a development item. Every subset of the candidates that keeps the first one is fitted by the stacker
at each of its settings (no margin term) and measured by leave-one-set-out on the recipe's judged train
partitions; the table lists each subset's best setting, highest LOSO Pearson first. unref-minilm-commercial
serves the subset at the top of its table."""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

from training.core.cli import positive_int
from training.core.turn_training import Config
from training.encoders.minilm.embed import EmbeddingCache
from training.unref import fit as stacker
from training.unref.heads import GROUPS
from training.unref.recipes import MINILM, MPNET, RECIPES, TEXT, copy_excess, cos_mean
from training.unref.signals import matrix
from training.unref.train import Rows, default_cache

def candidates(encoder: str) -> dict[str, dict]:
    """The signals a subset is drawn from, the vector ones on `encoder`'s vectors."""
    specs = (cos_mean(encoder, 1), cos_mean(encoder, 2), cos_mean(encoder, 5), copy_excess(encoder), *TEXT)
    return {spec["name"]: spec for spec in specs}


CANDIDATE_NAMES = tuple(candidates(MINILM))  # the same names on every encoder
SETTINGS = {**stacker.SEARCH, "rank": (0.0,)}  # no negative samples: the margin term's weight changes nothing


def scan(X: np.ndarray, human: np.ndarray, sets: np.ndarray, contexts: np.ndarray, names: list[str],
         search: dict[str, tuple] = SETTINGS) -> list[tuple[tuple[str, ...], stacker.Trial]]:
    """(subset, its best trial) for every subset of the columns that holds column 0, best first."""
    groups = np.array([GROUPS[s] for s in sets])
    found = []
    for size in range(len(names)):
        for extra in itertools.combinations(range(1, len(names)), size):
            columns = [0, *extra]
            chosen = [names[c] for c in columns]
            trials = [stacker.leave_one_set_out(X[:, columns], human, sets, groups, contexts, chosen, setting)
                      for setting in stacker.settings(search)]
            found.append((tuple(chosen), max(trials, key=lambda t: t.loso_pearson)))
    return sorted(found, key=lambda row: -row[1].loso_pearson)


def table(found: list[tuple[tuple[str, ...], stacker.Trial]]) -> str:
    lines = ["| signals | LOSO r | worst group | LOSO pairwise | lambda | target | weighting | signed |",
             "|---|---|---|---|---|---|---|---|"]
    for chosen, trial in found:
        s = trial.setting
        pairwise = "–" if trial.loso_pairwise is None else f"{trial.loso_pairwise:.4f}"
        lines.append(f"| {', '.join(chosen)} | {trial.loso_pearson:.4f} | {trial.loso_worst:.4f} | {pairwise} | "
                     f"{s.lam:g} | {s.target} | {s.weighting} | {s.nonneg} |")
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
    parser.add_argument("--max-judged", type=positive_int, default=None, help="tests: judged train items per set")
    args = parser.parse_args(argv)
    if len(set(args.signals)) != len(args.signals):
        parser.error("--signals: name each signal once")
    recipe = RECIPES[args.model]
    rows = Rows.load(args.max_judged, Config(), 0, recipe.rated_sets, "none")
    cache = EmbeddingCache(args.cache or default_cache(args.encoder), encoder_folder=args.store / args.encoder)
    specs = tuple(candidates(args.encoder)[name] for name in args.signals)
    X = matrix(specs, {args.encoder: cache}, rows.contexts, rows.replies, {})
    print(f"{len(rows.replies)} judged train items of {', '.join(recipe.rated_sets)}; "
          f"{2 ** (len(specs) - 1)} subsets x {len(stacker.settings(SETTINGS))} settings", flush=True)
    print(table(scan(X, rows.human, rows.sets, rows.contexts_of, list(args.signals))), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
