"""`python -m training baselines`: manifests and cards for the untrained baselines.

They have no weights (or only the shared GloVe table), but are served like every model so
that every evaluation and every client sees them beside the learned metrics.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from service.artifacts.manifest import write_manifest
from training.baselines.card import BASELINES, TEMPLATES, VERSION, baseline_readme
from training.core.card import render_fields, with_measured_fields, write_card


def write_baselines(root: Path) -> None:
    """A manifest and a card for every baseline; the figures measured into their cards are kept."""
    for name, spec in BASELINES.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        card = with_measured_fields(render_fields(TEMPLATES.card(name), {}), folder)
        manifest = write_manifest(folder, name=name, version=spec.get("version", VERSION), kind=spec["kind"], scorer=name,
                                  score_range=spec["score_range"], uses=spec["uses"], card=card)
        write_card(folder, baseline_readme(manifest))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m training baselines", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("model_store"))
    write_baselines(parser.parse_args(argv).root)
    return 0
