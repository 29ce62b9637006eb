"""`python -m training minilm-cosine`: the store folder of the untrained minilm-cosine baseline (manifest and card)."""
from __future__ import annotations

import argparse
from pathlib import Path

from service.artifacts.manifest import Manifest, write_manifest
from training.baselines.card import TEMPLATES
from training.core.card import render_fields, with_measured_fields
from training.core.turn_cards import ENCODER, shared_phrases, write_readme

NAME = "minilm-cosine"
VERSION = "2026.11.0"


def write_minilm_cosine(folder: Path) -> Manifest:
    """The untrained baseline needs no artifact: a manifest and a card."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    card = with_measured_fields(render_fields(TEMPLATES.card(NAME), shared_phrases()), folder)
    manifest = write_manifest(folder, name=folder.name, version=VERSION, card=card,
                              kind="referenced", scorer="minilm-cosine", score_range=(-1.0, 1.0), uses=[ENCODER],
                              config={"context_encoding": "last"})
    write_readme(folder, manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training minilm-cosine", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("model_store/minilm-cosine"))
    args = parser.parse_args(argv)
    write_minilm_cosine(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
