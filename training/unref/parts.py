"""`python -m training unref-parts`: RUBER's unreferenced metric s_U as models of their own (kind
`unreferenced`), from the referenced models' store folders.

Tao et al. 2018 call s_U the "unreferenced metric": a score of the reply in its context alone, which a
bot re-ranking live candidates can call. Each folder holds copies of the graphs s_U runs (identical
bytes: git stores one blob for both folders) and names its source, version and the files' hashes in
config.derived_from; rerun this command after the source is retrained (a test checks the copies).

ADEM's c^T M r_hat term is not served alone: the paper trains it only jointly with the reference term and
names no reference-free metric; AutoJudge (autojudge, autojudge-minilm) is that form trained alone.
"""
from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from service.store.manifest import Manifest, read_manifest, write_manifest
from training.core.card import from_manifest, with_measured_fields, write_card
from training.core.staging import staged_folder


@dataclass(frozen=True)
class Part:
    source: str
    files: tuple[str, ...]
    config_keys: tuple[str, ...]
    summary: str
    limitations: str


PARTS = {
    "ruber-unref": Part(
        "ruber", ("query_encoder.onnx", "reply_encoder.onnx", "head.onnx"), ("query_turns", "max_words"),
        "RUBER's unreferenced metric s_U alone (Tao et al. 2018), from the classic `ruber`: its two BiGRU encoders over "
        "GloVe-50d vectors of the query (the last turn) and the reply, and the MLP head on [q; q^T M r; r] with a "
        "sigmoid, trained by negative sampling only (no human score). The score is s_U in (0, 1) as the head "
        "returns it, before the min-max normalisation `ruber` applies to blend it with its referenced part.",
        "trained to tell a context's own reply from random ones on DailyDialog, not to rate replies as people do; "
        "it ranks a copy of the last turn above the human reply in most of the degenerate check's cases, as `ruber` "
        "does: served as the paper's part, not to re-rank with (use unref-minilm). GloVe's 400k lower-cased words, "
        "so English only."),
    "ruber-minilm-unref": Part(
        "ruber-minilm", ("head.onnx",), ("context_encoding", "pooling"),
        "RUBER's unreferenced metric s_U alone (Tao et al. 2018), from `ruber-minilm`: sigmoid(s c^T M r + "
        "MLP([c; c^T M r; r]) - copy) on all-MiniLM-L6-v2 vectors of the last turn and the reply, trained by "
        "negative sampling only (no human score). The score is s_U in (0, 1) as the head returns it (its graph's "
        "`s_unref`, which does not read the graph's reference input), before the min-max normalisation "
        "`ruber-minilm` applies to blend it with its referenced part.",
        "trained to tell a context's own reply from random, adversarial and degenerate ones, not to rate replies "
        "as people do; just under the 95% bar of the degenerate check, as `ruber-minilm` is. For re-ranking, "
        "unref-minilm reads this signal and more on the same encoder pass. English only (minilm-l6's card)."),
}
USES = ("Scoring a reply in its context where no reference exists, such as re-ranking live candidates (`/rerank`); "
        "the paper's own reference-free half of RUBER, served so it can be called alone.")


def write_part(store: Path, name: str) -> Manifest:
    """The folder of one part, from its source's folder in `store`."""
    part = PARTS[name]
    source = read_manifest(store / part.source)
    derived = {"model": part.source, "version": source.version,
               "files": {f: source.files[f]["sha256"] for f in part.files}}
    card = {"summary": part.summary, "inputs": "context (the last turn read) and reply; no reference",
            "training_data": f"none of its own: {part.source}'s s_U, whose training is on {part.source}'s card",
            "licence": source.card.get("licence", ""), "limitations": part.limitations,
            "citation": source.card.get("citation", ""),
            "reproduce": f"python -m training unref-parts --models {name}\npython -m training evaluate\n"
                         "python -m training degenerate"}
    old = store / name / "manifest.json"
    if old.is_file() and json.loads(old.read_text(encoding="utf-8")).get("config", {}).get("derived_from") == derived:
        card = with_measured_fields(card, store / name)  # the same graphs: their figures still hold
    with staged_folder(store / name, name) as stage:
        for filename in part.files:
            shutil.copyfile(source.path(filename), stage / filename)
        config = {key: source.config[key] for key in part.config_keys if key in source.config}
        manifest = write_manifest(stage, name=name, version=source.version, kind="unreferenced", scorer=name,
                                  score_range=(0.0, 1.0), uses=list(source.uses),
                                  config={**config, "derived_from": derived}, card=card)
        write_card(stage, from_manifest(manifest, name, USES, card["reproduce"]))
    return read_manifest(store / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training unref-parts", description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--models", nargs="+", choices=sorted(PARTS), default=sorted(PARTS))
    args = parser.parse_args(argv)
    for name in args.models:
        write_part(args.store, name)
        print(f"wrote {args.store / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
