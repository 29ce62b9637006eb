"""`python -m training minilm-cosine`: the store folder of the untrained minilm-cosine baseline (manifest and card)."""
from __future__ import annotations

import argparse
from pathlib import Path

from service.artifacts.manifest import Manifest, write_manifest
from training.core.card import with_measured_fields
from training.core.minilm_cards import (CITATIONS, ENCODER, ENCODER_LICENCE, ENCODER_LIMITATION, LIMITATIONS, SUMMARIES, VERSION,
                                  write_readme)


def write_minilm_cosine(folder: Path) -> Manifest:
    """The untrained baseline needs no artifact: a manifest and a card."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    card = with_measured_fields({"summary": SUMMARIES["minilm-cosine"],
                                 "inputs": "context (last turn used), reply, reference",
                                 "training_data": "none (untrained)", "licence": ENCODER_LICENCE,
                                 "limitations": LIMITATIONS["minilm-cosine"] + ENCODER_LIMITATION,
                                 "citation": CITATIONS["minilm-cosine"],
                                 "reproduce": "python -m training minilm-cosine\npython -m training minilm-report\n"
                                              "python -m training degenerate"}, folder)
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
