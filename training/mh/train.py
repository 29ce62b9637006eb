"""`python -m training train-mh`: fit M_H on ConvAI2, validate leave-bot-out, export `model_store/mh`.

Steps: proxies of every rated ConvAI2 human-bot conversation (service code, store components);
leave-bot-out regression (one fold per bot); conversation- and bot-level correlations next to
the mean-reply-length baseline and every single proxy; the same for the paper's -B variant (the
bot's turns only, as in self-play); the final fit on all bots, applied unchanged to iEval and
ConTurE; the artifact, its card and the `mh` section of docs/evaluation.md.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from service import proxies, stats
from service.manifest import read_manifest
from training.mh import data, evaluate, features, fit, export
from training.core.cli import nonnegative_float, output_dir, output_file, positive_int
from training.data.corpora import DEFAULT_DATA_DIR

VERSION = "2026.11.2"  # .1: proxies held to their fitting range; .2: bot-only and self-play read every consecutive pair


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


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.time()
    CACHED_SECONDS.clear()
    components = features.load_components(args.store)
    print(f"components from {args.store}: {', '.join(components)}", flush=True)

    everything = data.load_convai2(args.data_dir / "judgements", 1)
    x_all = _cached_matrix(everything, components, "human-bot", args.cache)
    x_bot_all = _cached_matrix(everything, components, "bot-only", args.cache)
    exchanges = np.array([data.exchanges(c.speakers) for c in everything])
    keep = exchanges >= args.min_pairs
    convai2 = [c for c, k in zip(everything, keep) if k]
    x, x_bot = x_all[keep], x_bot_all[keep]
    ratings = np.array([c.rating for c in convai2])
    bots = [c.bot for c in convai2]
    names = sorted(set(bots))
    print(f"ConvAI2: {len(convai2)} rated conversations, {len(names)} bots", flush=True)

    lbo = fit.leave_bot_out(x, ratings, bots, args.ridge)
    lbo_bot = fit.leave_bot_out(x_bot, ratings, bots, args.ridge)
    final = fit.fit(x, ratings, args.ridge)
    # The paper's self-play estimate: coefficients fitted on human-bot proxies, applied to bot-side proxies.
    transfer_bot = np.concatenate([fold.predict(x_bot[np.asarray(bots) == name])
                                   for name, fold in zip(lbo.bots, lbo.folds)])
    order = np.concatenate([np.flatnonzero(np.asarray(bots) == name) for name in lbo.bots])
    transferred = np.empty(len(ratings))
    transferred[order] = transfer_bot

    length = evaluate.mean_reply_words([c.bot_turns for c in convai2])
    bot_human = evaluate.group_means(ratings, bots, names)
    bot_mh = evaluate.group_means(lbo.predictions, bots, names)
    bot_length = evaluate.group_means(length, bots, names)
    comparison = {
        "paired_bootstrap_over_bots": stats.paired_bootstrap(bot_human, bot_mh, bot_length, resamples=2000),
        "williams": stats.williams_test(float(np.corrcoef(bot_mh, bot_human)[0, 1]),
                                        float(np.corrcoef(bot_length, bot_human)[0, 1]),
                                        float(np.corrcoef(bot_mh, bot_length)[0, 1]), len(names)),
    }
    sensitivity = []
    for minimum in (1, 2, 3, 4):
        rows = exchanges >= minimum
        sub_bots = [c.bot for c, k in zip(everything, rows) if k]
        sub_y = np.array([c.rating for c, k in zip(everything, rows) if k])
        sub = fit.leave_bot_out(x_all[rows], sub_y, sub_bots, args.ridge)
        sub_names = sorted(set(sub_bots))
        sub_length = evaluate.mean_reply_words([c.bot_turns for c, k in zip(everything, rows) if k])
        sensitivity.append({"min_pairs": minimum, "conversations": int(rows.sum()),
                            "mh_bot": bot_level(sub.predictions, sub_y, sub_bots, sub_names),
                            "length_bot": bot_level(sub_length, sub_y, sub_bots, sub_names),
                            "mh_conversation": evaluate.correlate(sub.predictions, sub_y)})

    result: dict[str, Any] = {
        "data": {"convai2_conversations": len(convai2), "bots": names, "min_pairs": args.min_pairs,
                 "ratings_per_bot": {n: int(sum(b == n for b in bots)) for n in names},
                 "mean_rating_per_bot": dict(zip(names, evaluate.group_means(ratings, bots, names).tolist()))},
        "leave_bot_out": {
            "conversation": evaluate.correlate(lbo.predictions, ratings),
            "bot": bot_level(lbo.predictions, ratings, bots, names),
            "bot_means": dict(zip(names, evaluate.group_means(lbo.predictions, bots, names).tolist())),
        },
        "bot_only_B": {
            "fitted_on_human_bot": {"conversation": evaluate.correlate(transferred, ratings),
                                    "bot": bot_level(transferred, ratings, bots, names)},
            "refitted_on_B": {"conversation": evaluate.correlate(lbo_bot.predictions, ratings),
                              "bot": bot_level(lbo_bot.predictions, ratings, bots, names)},
        },
        "mh_vs_length_bot_level": comparison,
        "sensitivity_min_pairs": sensitivity,
        "baseline_reply_length": {"conversation": evaluate.correlate(length, ratings),
                                  "bot": bot_level(length, ratings, bots, names)},
        "proxies": {name: {"conversation": evaluate.correlate(x[:, i], ratings),
                           "bot": bot_level(x[:, i], ratings, bots, names),
                           "missing": int(np.isnan(x[:, i]).sum())}
                    for i, name in enumerate(proxies.PROXIES)},
        "coefficients": dict(zip(proxies.PROXIES, final.coefficients.tolist())),
        "intercept": final.intercept,
        "stability": fit.coefficient_stability(lbo.folds, proxies.PROXIES),
        "in_sample": {"conversation": evaluate.correlate(final.predict(x), ratings)},
        "transfer": {},
    }
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
        result["transfer"][name] = entry
        print(f"{name}: {len(rated)} conversations, r = {entry['conversation']['pearson']}", flush=True)
    # Proxies read from the cache cost nothing now but did when computed: count them at that cost.
    result["seconds"] = time.time() - started + float(sum(CACHED_SECONDS))
    if not args.no_write:
        export.write_artifact(args.out, final, result, VERSION, read_manifest(args.store / features.ENCODER))
        export.write_docs(args.docs, result, " ".join(args.command_line))
        print(f"wrote {args.out} and the mh section of {args.docs}", flush=True)
    if args.results:
        args.results.write_text(json.dumps(result, indent=2) + "\n")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training train-mh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    # The data root (judgements/ under it), as every other command: DIALSCORE_DATA_DIR or `make train DATA=`
    # sets its default. (It was --data, the judgements folder, read from the file's place only.)
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
    args = parser.parse_args(argv)
    args.command_line = ["python -m training train-mh", *(argv or [])]
    result = run(args)
    lbo = result["leave_bot_out"]
    print(json.dumps({"bot_level_mh": lbo["bot"], "bot_level_length": result["baseline_reply_length"]["bot"],
                      "conversation_level_mh": lbo["conversation"]}, indent=2))
    return 0
