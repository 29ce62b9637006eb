"""`python -m training reference-speed`: sentence-transformers' texts/s on distinct DailyDialog turns, the
reference `make bench` (benchmarks/bench.py) sets the service's MiniLM path against, in the same run.

Writes JSON: the texts (so that the bench sends the service the very same ones), their mean word
pieces, and the texts/s of all-MiniLM-L6-v2 in torch, fp32, eager, batch 32, on `--threads` threads
(the best of `--repeats` passes after one warm-up pass)."""
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
    lone_seconds = []
    for _ in range(args.lone_repeats if lone else 0):
        started = time.perf_counter()
        model.encode(lone, batch_size=args.batch)
        lone_seconds.append(time.perf_counter() - started)
    args.out.write_text(json.dumps({
        **({"lone_texts": len(lone), "lone_ms": 1000 * sorted(lone_seconds)[len(lone_seconds) // 2]} if lone else {}),
        "texts": texts, "mean_pieces": sum(pieces) / len(pieces), "threads": args.threads, "batch": args.batch,
        "texts_per_s": len(texts) / min(seconds), "runs_texts_per_s": [len(texts) / s for s in seconds],
        "versions": f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}",
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
