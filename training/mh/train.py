"""`python -m training train-mh`: fit M_H on ConvAI2, validate leave-bot-out, export `model_store/mh`."""
from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from service import stats
from service.scorers.mh import proxies
from service.artifacts.manifest import read_manifest
from training.core.cli import nonnegative_float, output_dir, output_file, positive_int, without_figures
from training.data.corpora import DEFAULT_DATA_DIR
from training.mh import data, evaluate, export, features, model
from training.mh.report import write_docs


VERSION = "2026.12.0"


CACHED_SECONDS: list[float] = []  # what the proxy matrices read from the cache took to compute


def _cached_matrix(conversations: list[data.Rated], components: dict[str, Any], variant: str,
                   cache_dir: Path | None) -> np.ndarray:
    """Proxy matrix, memoised on disk by content (conversations, variant, component hashes, proxies).

    The seconds it took are kept beside it, so a run from the cache still reports the full cost.
    """
    if cache_dir is None:
        return features.proxy_matrix(conversations, components, variant)
    digest = hashlib.sha256()
    for component in components.values():
        digest.update(component.manifest.sha256.encode())
    digest.update(json.dumps([variant, list(proxies.PROXIES), Path(proxies.__file__).read_bytes().hex()]).encode())
    for c in conversations:
        digest.update(json.dumps([c.speakers, c.texts]).encode())
    path = Path(cache_dir) / f"mh-{digest.hexdigest()[:20]}.npy"
    seconds_path = path.with_suffix(".seconds.json")
    if path.is_file() and seconds_path.is_file():
        CACHED_SECONDS.append(float(json.loads(seconds_path.read_text())["seconds"]))
        return np.load(path, allow_pickle=False)
    started = time.time()
    matrix = features.proxy_matrix(conversations, components, variant)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix, allow_pickle=False)
    seconds_path.write_text(json.dumps({"seconds": time.time() - started}))
    return matrix


def bot_level(predictions: np.ndarray, ratings: np.ndarray, bots: list[str], names: list[str]) -> dict[str, Any]:
    return evaluate.correlate(evaluate.group_means(predictions, bots, names),
                              evaluate.group_means(ratings, bots, names))


@dataclass
class ConvAI2:
    """The rated ConvAI2 conversations with their proxies: all of them (for the sensitivity table) and
    those with at least --min-pairs exchanges (fitted and measured)."""

    everything: list[data.Rated]
    x_everything: np.ndarray
    exchanges: np.ndarray
    conversations: list[data.Rated]
    x: np.ndarray  # human-bot proxies
    x_bot: np.ndarray  # the bot's turns only (the paper's -B)
    ratings: np.ndarray
    bots: list[str]
    names: list[str]


def read_convai2(args: argparse.Namespace, components: dict[str, Any]) -> ConvAI2:
    """Step 1: the rated ConvAI2 human-bot conversations and their proxies (service code, store components)."""
    everything = data.load_convai2(args.data_dir / "judgements", 1)
    x_all = _cached_matrix(everything, components, "human-bot", args.cache)
    x_bot_all = _cached_matrix(everything, components, "bot-only", args.cache)
    exchanges = np.array([data.exchanges(c.speakers) for c in everything])
    keep = exchanges >= args.min_pairs
    conversations = [c for c, k in zip(everything, keep) if k]
    bots = [c.bot for c in conversations]
    found = ConvAI2(everything, x_all, exchanges, conversations, x_all[keep], x_bot_all[keep],
                    np.array([c.rating for c in conversations]), bots, sorted(set(bots)))
    print(f"ConvAI2: {len(conversations)} rated conversations, {len(found.names)} bots", flush=True)
    return found


@dataclass
class Fits:
    """Step 2: leave-bot-out folds (human-bot and -B proxies), the final fit on every bot, and the
    paper's self-play estimate (each fold's human-bot coefficients on its bot's -B proxies)."""

    leave_bot_out: model.LeaveBotOut
    leave_bot_out_b: model.LeaveBotOut
    final: model.Linear
    transferred: np.ndarray


def fit_convai2(c: ConvAI2, ridge: float) -> Fits:
    lbo = model.leave_bot_out(c.x, c.ratings, c.bots, ridge)
    lbo_bot = model.leave_bot_out(c.x_bot, c.ratings, c.bots, ridge)
    final = model.fit(c.x, c.ratings, ridge)
    transfer_bot = np.concatenate([fold.predict(c.x_bot[np.asarray(c.bots) == name])
                                   for name, fold in zip(lbo.bots, lbo.folds)])
    order = np.concatenate([np.flatnonzero(np.asarray(c.bots) == name) for name in lbo.bots])
    transferred = np.empty(len(c.ratings))
    transferred[order] = transfer_bot
    return Fits(lbo, lbo_bot, final, transferred)


def against_length(c: ConvAI2, predictions: np.ndarray) -> dict[str, Any]:
    """M_H against the bot's mean reply length at bot level: paired bootstrap over bots, Williams' test."""
    bot_human = evaluate.group_means(c.ratings, c.bots, c.names)
    bot_mh = evaluate.group_means(predictions, c.bots, c.names)
    bot_length = evaluate.group_means(evaluate.mean_reply_words([x.bot_turns for x in c.conversations]), c.bots,
                                      c.names)
    return {
        "paired_bootstrap_over_bots": stats.paired_bootstrap(bot_human, bot_mh, bot_length, resamples=2000),
        "williams": stats.williams_test(float(np.corrcoef(bot_mh, bot_human)[0, 1]),
                                        float(np.corrcoef(bot_length, bot_human)[0, 1]),
                                        float(np.corrcoef(bot_mh, bot_length)[0, 1]), len(c.names)),
    }


def sensitivity(c: ConvAI2, ridge: float) -> list[dict[str, Any]]:
    """Leave-bot-out again for each minimum number of exchanges, 1 to 4: how much the choice of 3 matters."""
    rows = []
    for minimum in (1, 2, 3, 4):
        kept = c.exchanges >= minimum
        bots = [x.bot for x, k in zip(c.everything, kept) if k]
        y = np.array([x.rating for x, k in zip(c.everything, kept) if k])
        folds = model.leave_bot_out(c.x_everything[kept], y, bots, ridge)
        names = sorted(set(bots))
        length = evaluate.mean_reply_words([x.bot_turns for x, k in zip(c.everything, kept) if k])
        rows.append({"min_pairs": minimum, "conversations": int(kept.sum()),
                     "mh_bot": bot_level(folds.predictions, y, bots, names),
                     "length_bot": bot_level(length, y, bots, names),
                     "mh_conversation": evaluate.correlate(folds.predictions, y)})
    return rows


def measure(c: ConvAI2, fits: Fits, min_pairs: int, ridge: float) -> dict[str, Any]:
    """Step 3: every ConvAI2 figure of the card and the docs, at conversation and at bot level."""
    lbo, ratings, bots, names = fits.leave_bot_out, c.ratings, c.bots, c.names
    length = evaluate.mean_reply_words([x.bot_turns for x in c.conversations])
    return {
        "data": {"convai2_conversations": len(c.conversations), "bots": names, "min_pairs": min_pairs,
                 "ratings_per_bot": {n: int(sum(b == n for b in bots)) for n in names},
                 "mean_rating_per_bot": dict(zip(names, evaluate.group_means(ratings, bots, names).tolist()))},
        "leave_bot_out": {
            "conversation": evaluate.correlate(lbo.predictions, ratings),
            "bot": bot_level(lbo.predictions, ratings, bots, names),
            "bot_means": dict(zip(names, evaluate.group_means(lbo.predictions, bots, names).tolist())),
        },
        "bot_only_B": {
            "fitted_on_human_bot": {"conversation": evaluate.correlate(fits.transferred, ratings),
                                    "bot": bot_level(fits.transferred, ratings, bots, names)},
            "refitted_on_B": {"conversation": evaluate.correlate(fits.leave_bot_out_b.predictions, ratings),
                              "bot": bot_level(fits.leave_bot_out_b.predictions, ratings, bots, names)},
        },
        "mh_vs_length_bot_level": against_length(c, lbo.predictions),
        "sensitivity_min_pairs": sensitivity(c, ridge),
        "baseline_reply_length": {"conversation": evaluate.correlate(length, ratings),
                                  "bot": bot_level(length, ratings, bots, names)},
        "proxies": {name: {"conversation": evaluate.correlate(c.x[:, i], ratings),
                           "bot": bot_level(c.x[:, i], ratings, bots, names),
                           "missing": int(np.isnan(c.x[:, i]).sum())}
                    for i, name in enumerate(proxies.PROXIES)},
        "coefficients": dict(zip(proxies.PROXIES, fits.final.coefficients.tolist())),
        "intercept": fits.final.intercept,
        "stability": model.coefficient_stability(lbo.folds, proxies.PROXIES),
        "in_sample": {"conversation": evaluate.correlate(fits.final.predict(c.x), ratings)},
    }


def transfer(final: model.Linear, args: argparse.Namespace, components: dict[str, Any]) -> dict[str, Any]:
    """Step 4: the final ConvAI2 fit applied unchanged to iEval and ConTurE."""
    out: dict[str, Any] = {}
    for name, loader, extra in (("ieval", data.load_ieval, "likert_mean"), ("conture", data.load_conture, None)):
        rated = loader(args.data_dir / "judgements", args.min_pairs)
        m = np.clip(final.predict(_cached_matrix(rated, components, "human-bot", args.cache)), 1.0, 5.0)
        y = np.array([c.rating for c in rated])
        entry: dict[str, Any] = {"conversations": len(rated), "conversation": evaluate.correlate(m, y),
                                 "length_baseline": evaluate.correlate(
                                     evaluate.mean_reply_words([c.bot_turns for c in rated]), y)}
        if extra:
            entry["conversation_" + extra] = evaluate.correlate(m, [c.extra[extra] for c in rated])
        if all(c.bot for c in rated):
            rb = [c.bot for c in rated]
            rnames = sorted(set(rb))
            entry["bot"] = bot_level(m, y, rb, rnames)
            entry["length_bot"] = bot_level(evaluate.mean_reply_words([c.bot_turns for c in rated]), y, rb, rnames)
            entry["bot_means"] = {n: [float(a), float(b)] for n, a, b in zip(
                rnames, evaluate.group_means(m, rb, rnames), evaluate.group_means(y, rb, rnames))}
        out[name] = entry
        print(f"{name}: {len(rated)} conversations, r = {entry['conversation']['pearson']}", flush=True)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Read, fit, measure, transfer, then (unless --no-write) write the artifact, its card and the docs."""
    started = time.time()
    CACHED_SECONDS.clear()
    components = features.load_components(args.store)
    print(f"components from {args.store}: {', '.join(components)}", flush=True)
    convai2 = read_convai2(args, components)
    fits = fit_convai2(convai2, args.ridge)
    result = measure(convai2, fits, args.min_pairs, args.ridge)
    result["transfer"] = transfer(fits.final, args, components)
    # Proxies read from the cache cost nothing now but did when computed: count them at that cost.
    result["seconds"] = time.time() - started + float(sum(CACHED_SECONDS))
    if not args.no_write:
        export.write_artifact(args.out, fits.final, result, VERSION, read_manifest(args.store / features.ENCODER),
                              args.figures)
        write_docs(args.docs, result, " ".join(args.command_line))
        print(f"wrote {args.out} and the mh section of {args.docs}", flush=True)
    if args.results:
        args.results.write_text(json.dumps(result, indent=2) + "\n")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training train-mh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    # The data root (judgements/ under it), as every other command: DIALSCORE_DATA_DIR or `make train DATA=`
    # sets its default.
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help="data root holding judgements/ (default: DIALSCORE_DATA_DIR or ../shared/data)")
    parser.add_argument("--store", type=Path, default=Path("model_store"),
                        help="model store holding glove-50d and minilm-l6")
    parser.add_argument("--out", type=output_dir, default=Path("model_store/mh"), help="artifact folder to write")
    parser.add_argument("--docs", type=Path, default=Path("docs/evaluation.md"), help="evaluation page to update")
    parser.add_argument("--min-pairs", type=positive_int, default=3,
                        help="keep conversations with at least this many user-then-bot exchanges (the paper: 3 turns)")
    parser.add_argument("--ridge", type=nonnegative_float, default=0.0, help="ridge penalty (0: plain least squares)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/dialscore-mh-cache"),
                        help="folder for cached proxy matrices")
    parser.add_argument("--results", type=output_file, help="also write every figure to this JSON file")
    parser.add_argument("--no-write", action="store_true", help="measure only; write no artifact or docs")
    parser.add_argument("--figures", type=output_dir, default=None,
                        help="also write the card's figures here (make train: docs/cards)")
    args = parser.parse_args(argv)
    args.command_line = ["python -m training train-mh", *without_figures(argv or [])]
    result = run(args)
    lbo = result["leave_bot_out"]
    print(json.dumps({"bot_level_mh": lbo["bot"], "bot_level_length": result["baseline_reply_length"]["bot"],
                      "conversation_level_mh": lbo["conversation"]}, indent=2))
    return 0
