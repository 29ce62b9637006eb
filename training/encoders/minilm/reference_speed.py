"""`python -m training reference-speed`: sentence-transformers' texts/s on distinct DailyDialog turns, the
reference `make bench` (benchmarks/bench.py) sets the service's MiniLM path against, in the same run.

Writes JSON: the texts (so that the bench sends the service the very same ones), their mean word
pieces, and the texts/s of all-MiniLM-L6-v2 in torch, fp32, eager, batch 32, on `--threads` threads
(the best of `--repeats` passes after one warm-up pass); with `--lone` and `--mpnet-wheels`, also
all-mpnet-base-v2 (make encoder-mpnet's wheels) encoding the lone texts, for the unref-mpnet rows."""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def distinct_turns(count: int, split: str = "validation") -> list[str]:
    from training.data.corpora import dailydialog

    return list(dict.fromkeys(turn for dialogue in dailydialog(split) for turn in dialogue))[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training reference-speed", description=__doc__)
    parser.add_argument("--texts", type=int, default=2016, help="distinct DailyDialog validation turns")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch's intra-op threads")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lone", type=Path, help="also a JSON list of texts to time as one call, one at a time "
                        "(a lone re-ranking's texts): the median of --lone-repeats calls, in ms")
    parser.add_argument("--lone-repeats", type=int, default=15)
    parser.add_argument("--mpnet-wheels", type=Path, help="also time all-mpnet-base-v2, assembled from these wheels "
                        "(requirements-mpnet.txt), on the --lone texts")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    from training.encoders.minilm.export import model_path

    torch.set_num_threads(args.threads)
    texts = distinct_turns(args.texts)
    model = SentenceTransformer(str(model_path()), device="cpu")
    pieces = [len(ids) for ids in model.tokenizer(texts, truncation=True, max_length=256)["input_ids"]]
    model.encode(texts, batch_size=args.batch)  # warm-up: first calls allocate and pick kernels
    seconds = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        model.encode(texts, batch_size=args.batch)
        seconds.append(time.perf_counter() - started)
    lone = json.loads(args.lone.read_text()) if args.lone else []
    mpnet = {"mpnet_lone_ms": _mpnet_lone_ms(args.mpnet_wheels, lone, args)} if lone and args.mpnet_wheels else {}
    args.out.write_text(json.dumps({
        **({"lone_texts": len(lone), "lone_ms": lone_ms(model, lone, args)} if lone else {}), **mpnet,
        "texts": texts, "mean_pieces": sum(pieces) / len(pieces), "threads": args.threads, "batch": args.batch,
        "texts_per_s": len(texts) / min(seconds), "runs_texts_per_s": [len(texts) / s for s in seconds],
        "versions": f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}",
    }))
    return 0


def lone_ms(model, lone: list[str], args: argparse.Namespace) -> float:
    """The median of --lone-repeats calls encoding `lone` as one call, in ms (after one warm-up call)."""
    model.encode(lone, batch_size=args.batch)
    seconds = []
    for _ in range(args.lone_repeats):
        started = time.perf_counter()
        model.encode(lone, batch_size=args.batch)
        seconds.append(time.perf_counter() - started)
    return 1000 * sorted(seconds)[len(seconds) // 2]


def _mpnet_lone_ms(wheels: Path, lone: list[str], args: argparse.Namespace) -> float:
    import tempfile

    from sentence_transformers import SentenceTransformer

    from training.encoders.mpnet.assemble import assemble

    with tempfile.TemporaryDirectory() as scratch:
        model = SentenceTransformer(str(assemble(wheels, Path(scratch))), device="cpu")
        return lone_ms(model, lone, args)


if __name__ == "__main__":
    raise SystemExit(main())
