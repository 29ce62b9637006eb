"""`python -m training export`: the VHRED encoder and the heads trained on it into the store, checked to match.

Every input is checked before anything is written (training/export_checks.py); the folders are built
in a hidden folder of the store and moved into place at the end, so a failure leaves the store as it was."""
from __future__ import annotations

import argparse
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import torch

from service.artifacts.manifest import read_manifest
from training import export_checks as checks
from training.adem import export as adem_export
from training.autojudge import export as autojudge_export
from training.core.cli import output_dir, version
from training.core.progress import setup_logging
from training.core.staging import publish, staged_store
from training.encoders.hred import export as hred_export

log = logging.getLogger("training.export")
# Each head's store folder from its run: model_store/<kind> (its graph, manifest and card).
EXPORT_RUN = {"adem": adem_export.export_run, "autojudge": autojudge_export.export_run}


def record_encoder(folder: Path, files: dict[str, str]) -> None:
    """Add the sha256 of the encoder files a head was exported for to its manifest
    (config.encoder_files, as mh records minilm-l6's), which the service compares with the store's
    encoder at load (service/artifacts/manifest.py encoder_drift). Done after the heads' export_run, which
    write the rest of the manifest and do not take it."""
    path = Path(folder) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["config"]["encoder_files"] = files
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    read_manifest(folder)  # still a manifest the service reads


def _served_encoder(store: Path, encoder_run: Any) -> tuple[dict[str, Any], int, str]:
    """The pre-training metrics, width and description of the encoder the heads will be served on."""
    if encoder_run is not None:
        return encoder_run.metrics, encoder_run.dimension, f"--vhred {encoder_run.folder}"
    found = checks.store_encoder_metrics(store)
    if found is None:
        raise checks.ExportError(f"{store} has no {checks.ENCODER}: export the encoder the heads were trained on "
                                 "with them (--vhred RUN)")
    return found[0], found[1], f"the {checks.ENCODER} in {store}"


def _write_encoder(encoder_run: Any, stage: Path, store: Path, version: str, figures: Path | None) -> None:
    if encoder_run is None:  # the heads are exported for the store's encoder: their cards read it
        shutil.copytree(store / checks.ENCODER, stage / checks.ENCODER)
        return
    hred_export.export_run(encoder_run.folder, encoder_run.metrics, stage / checks.ENCODER, version, figures)


def _refuse_orphans(store: Path, files: dict[str, str], rewritten: set[str], vhred: Path) -> None:
    orphans = checks.orphaned_heads(store, files, rewritten)
    if orphans:
        runs = " ".join(f"--{name} RUN" for name in orphans)
        raise checks.ExportError(
            f"writing --vhred {vhred} would leave {', '.join(orphans)} in {store} on an encoder they were not "
            f"trained on; export them with it ({runs}, runs trained with --encoder {vhred}) or into another --store")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m training export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=Path("model_store"), help="default: model_store")
    parser.add_argument("--vhred", type=Path, help="pre-training run folder (model.pt, tokenizer.json)")
    parser.add_argument("--adem", type=Path, help="ADEM run folder (head.pt, metrics.json)")
    parser.add_argument("--autojudge", type=Path, help="AutoJudge run folder (head.pt, metrics.json)")
    # Each artifact's version is its own; the defaults are the committed ones, so that `make train`
    # reproduces model_store/, versions included.
    parser.add_argument("--version", type=version, default="2026.11.3", help="of the adem and autojudge heads")
    parser.add_argument("--encoder-version", type=version, default="2026.11.2", help="of hred-encoder")
    parser.add_argument("--log", type=Path, default=None, help="also write the log here (make train: runs/export.log)")
    parser.add_argument("--figures", type=output_dir, default=None,
                        help="also write each card's figures here (make train: docs/cards)")
    args = parser.parse_args(argv)
    if not (args.vhred or args.adem or args.autojudge):
        parser.error("name what to export: --vhred, --adem and/or --autojudge")
    setup_logging(args.log)
    torch.set_num_threads(1)

    # Every input is read and checked before anything is written.
    encoder_run = checks.read_encoder_run(args.vhred) if args.vhred else None
    heads = [checks.read_head_run(kind, path) for kind, path in (("adem", args.adem), ("autojudge", args.autojudge))
             if path]
    if heads:
        served = _served_encoder(args.store, encoder_run)
        for head in heads:
            checks.check_head_encoder(head, *served)
    with staged_store(args.store) as stage:
        figures = stage / ".figures" if args.figures else None  # copied to --figures once the store is published
        _write_encoder(encoder_run, stage, args.store, args.encoder_version, figures)
        files = checks.encoder_files(stage / checks.ENCODER) if (stage / checks.ENCODER).is_dir() else {}
        if encoder_run is not None:
            _refuse_orphans(args.store, files, {h.kind for h in heads}, args.vhred)
        for head in heads:
            EXPORT_RUN[head.kind](head.folder, stage / head.kind, args.version, figures_folder=figures)
            record_encoder(stage / head.kind, files)
        publish(stage, args.store, ([checks.ENCODER] if encoder_run else []) + [h.kind for h in heads])
        for path in sorted(figures.glob("*.json")) if figures else ():
            shutil.copyfile(path, args.figures / path.name)
    log.info("wrote %s into %s", ", ".join(([checks.ENCODER] if encoder_run else []) + [h.kind for h in heads]),
             args.store)
    return 0
