"""`python -m training train-minilm`: the head of adem-minilm, ruber-minilm or autojudge-minilm on cached MiniLM
vectors, measured on the development sets and exported.

adem- and autojudge-minilm fit the judged train partitions plus a margin term on negative samples;
ruber-minilm's unreferenced part learns by negative sampling only. `--search` tries every context encoding;
`--out` exports the best."""
from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy import stats

from service.artifacts.manifest import Manifest, write_manifest
from training.adem.model import AdemHead
from training.autojudge.model import AutoJudgeHead
from training.core.card import write_figures
from training.core.cli import count, nonnegative_float, output_dir, output_file, positive_int
from training.core.next_turn import NEXT_TURN_MODELS, VectorCache
from training.core.staging import check_replaceable, staged_folder
from training.core.turn_cards import CODE, ENCODER, HEADS_VERSION, head_card, head_figures, write_readme
from training.core.turn_heads import POOLINGS, check_turn_head, export_turn_head
from training.core.turn_training import Config, fit, predict
from training.data.negatives import judged_rows
from training.encoders.minilm.embed import EmbeddingCache
from training.ruber import minilm as ruber_minilm
from training.ruber.model import RuberHead

# model -> its head on turn vectors, from (pooling, dim)
HEADS: dict[str, Callable[..., torch.nn.Module]] = {
    "adem-minilm": AdemHead.on_turns, "ruber-minilm": RuberHead.on_turns, "autojudge-minilm": AutoJudgeHead.on_turns}
# (context encoding, pooling) pairs tried by --search.
CHOICES = (("last", "last"), ("joined2", "last"), ("joined3", "last"), ("turns", "gru"), ("turns", "attn"))
ENCODINGS = tuple(dict.fromkeys(encoding for encoding, _ in CHOICES))  # the ones the embedding cache holds


def train(config: Config, cache: VectorCache, log: Callable[[str], Any] = print) -> torch.nn.Module:
    """`config.model`'s head, made after seeding torch with `config.seed`, trained on the cache's vectors."""
    torch.manual_seed(config.seed)
    head = HEADS[config.model](config.pooling, dim=cache.dim)
    return fit(head, config, cache, log)


def evaluate_dev(head: torch.nn.Module, config: Config, cache: VectorCache) -> dict[str, float]:
    """Pearson r with the humans per development set (referenced heads: sets with references); ruber-minilm's
    figures are those of the blend development data chooses (training.ruber.minilm.choose_blend)."""
    rows = judged_rows("dev", head.referenced, recover_references=config.recover_references)
    if config.model == ruber_minilm.NAME:
        return ruber_minilm.choose_blend(head, config, cache, rows)
    result = {}
    for name, (contexts, responses, references, scores) in rows.items():
        out = predict(head, cache, config.encoding, contexts, responses, references)
        result[name] = float(stats.pearsonr(out["score"], scores)[0])
    return result


def manifest_args(name: str, config: dict[str, Any]) -> dict[str, Any]:
    kind = "unreferenced" if name == "autojudge-minilm" else "referenced"
    score_range = (0.0, 1.0) if name == ruber_minilm.NAME else (1.0, 5.0)
    return {"kind": kind, "scorer": name, "score_range": score_range, "uses": [ENCODER], "config": config}


def export_model(head: torch.nn.Module, config: Config, cache: VectorCache, out: Path, dev: dict[str, float],
                 seconds: float, search: list[dict] | None = None, figures: Path | None = None) -> Manifest:
    """head.onnx (checked against torch) + manifest + README for one trained head; with `figures`, also the
    figures its card quotes that the manifest does not hold (<figures>/<model>.json)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.onnx"):
        stale.unlink()
    export_turn_head(head, out / "head.onnx")
    check_turn_head(head, out / "head.onnx")
    model_config: dict[str, Any] = {"context_encoding": config.encoding, "pooling": config.pooling}
    if config.model == ruber_minilm.NAME:
        model_config["normalise"] = ruber_minilm.ranges(head, config, cache)
    if config.model == "adem-minilm":
        model_config.update(alpha=float(head.alpha.detach()), beta=float(head.beta.detach()))
    options = ruber_minilm.options(config) if config.model == ruber_minilm.NAME else {}
    card = head_card(config.model, head_figures(config.model, vars(config), seconds, model_config, search, dev))
    manifest = write_manifest(out, name=out.name, version=HEADS_VERSION, card=card, options=options,
                              **manifest_args(config.model, model_config))
    write_readme(out, manifest)
    write_figures(figures, config.model, {"seconds": round(seconds), **CODE})
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training train-minilm", description=__doc__)
    parser.add_argument("--model", choices=sorted(HEADS), required=True)
    parser.add_argument("--encoding", default=None, choices=ENCODINGS,
                        help="context encoding: the last turn, the last K turns joined, or each turn (default: last)")
    parser.add_argument("--pooling", default=None, choices=POOLINGS,
                        help="how turn vectors are pooled (default: last)")
    parser.add_argument("--epochs", type=positive_int, default=Config.epochs)
    parser.add_argument("--search", action="store_true", help="try every encoding/pooling, print dev Pearson")
    parser.add_argument("--choices", nargs="+", default=None, metavar="ENCODING/POOLING",
                        choices=[f"{e}/{p}" for e in ENCODINGS for p in POOLINGS],
                        help="with --search: encoding/pooling pairs to try, e.g. turns/attn (default: "
                             + " ".join(f"{e}/{p}" for e, p in CHOICES) + ")")
    parser.add_argument("--reddit", action="store_true", help="ruber: DSTC7 human replies as extra positives")
    parser.add_argument("--zscore", action="store_true", help="per-set standardised targets, balanced sets")
    parser.add_argument("--rank-weight", type=nonnegative_float, default=Config.rank_weight)
    parser.add_argument("--l1", type=nonnegative_float, default=Config.l1)
    parser.add_argument("--next-turn-epochs", type=count, default=Config.next_turn_epochs,
                        help="adem-, autojudge- and ruber-minilm: epochs of next-turn pre-training of M "
                             "(0: start at the identity)")
    # Both written after the training: made and checked now (training/core/cli.py).
    parser.add_argument("--out", type=output_dir, default=None, help="store folder to export the model into")
    parser.add_argument("--results", type=output_file, default=None, help="append JSON lines of dev results here")
    parser.add_argument("--figures", type=output_dir, default=None,
                        help="with --out: also write the card's figures here (make train: docs/cards)")
    parser.add_argument("--seed", type=count, default=Config.seed)
    parser.add_argument("--note", default="", help="with --results: a note kept with the line (what was varied)")
    parser.add_argument("--no-recover-references", dest="recover_references", action="store_false",
                        help="dev figures on the sets that ship references only (the first runs' protocol)")
    args = parser.parse_args(argv)
    if args.out:
        check_replaceable(args.out, args.model)  # before the training, not after it
    torch.set_num_threads(1)
    cache = EmbeddingCache()
    choices = CHOICES if args.search else [(args.encoding or "last", args.pooling or "last")]
    if args.search and args.choices:
        choices = [tuple(choice.split("/")) for choice in args.choices]
    tried: list[dict] = []
    best = None
    for encoding, pooling in choices:
        if args.model == "ruber-minilm" and encoding.startswith("joined"):
            continue  # joined contexts of the DailyDialog pairs were not embedded (see the card)
        config = Config(model=args.model, encoding=encoding, pooling=pooling, epochs=args.epochs,
                        zscore=args.zscore, balance=args.zscore, rank_weight=args.rank_weight,
                        l1=args.l1, reddit_positives=args.reddit, seed=args.seed,
                        next_turn_epochs=args.next_turn_epochs,
                        recover_references=args.recover_references)
        started = time.time()
        head = train(config, cache)
        seconds = time.time() - started
        dev = evaluate_dev(head, config, cache)
        line = {"model": args.model, "encoding": encoding, "pooling": pooling, "train_seconds": round(seconds, 1),
                "targets": "per-set z, balanced" if args.zscore else "raw", "rank_weight": args.rank_weight,
                "l1": args.l1, "epochs": args.epochs, "reddit_positives": args.reddit,
                "dev_pearson": {k: round(v, 4) for k, v in dev.items()},
                "mean": round(float(np.mean(list(dev.values()))), 4), "seed": args.seed}
        if args.model in NEXT_TURN_MODELS:
            line["next_turn_epochs"] = args.next_turn_epochs
        if args.note:
            line["note"] = args.note
        if config.blend_dev:
            line["blend"] = config.blend
            line["blend_dev_pearson"] = config.blend_dev
        print(json.dumps(line), flush=True)
        tried.append(line)
        if args.results:
            with open(args.results, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        if best is None or line["mean"] > best[0]["mean"]:
            best = (line, head, config, dev, seconds)
    if args.out and best is not None:
        line, head, config, dev, seconds = best
        # built beside --out and swapped in whole (training/core/staging.py): stopped, it leaves the old folder
        with staged_folder(args.out, config.model) as stage:
            export_model(head, config, cache, stage, dev, seconds, search=tried if args.search else None,
                         figures=args.figures)
        print(f"exported {config.encoding}/{config.pooling} to {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
