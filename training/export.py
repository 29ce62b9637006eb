"""`python -m training export`: ONNX graphs, parity checks against torch, manifests and model cards.

The generic helpers (`export_onnx`, `check_parity`) are reused by other trainers: every graph
is exported with the legacy exporter (opset 17, `dynamo=False`, one file), its variable axes
are checked to be symbolic, and ONNX Runtime must match torch within `PARITY_ATOL` at several
shapes (batch 1, long inputs) before anything is written to the store.

Store folders written here: `hred-encoder` (tokenizer.json, utterance_encoder.onnx,
context_encoder.onnx), `adem` (adem_head.onnx) and `autojudge` (autojudge_head.onnx). The served
tokenizer.json is the run's with ’ ‘ “ ” mapped to ' and " in front of its BERT normaliser
(training/tokenizer.py `served`: the encoder and the heads were trained on the run's own, so the
mapping is added here and `make train` still reproduces them). Every input is
checked before anything is written (training/export_checks.py): a head must have been trained on the
encoder it will be served with, and a new encoder may not leave heads already in the store on an
encoder they were not trained on. The folders are built in a hidden folder of the store and moved
into place at the end, so a failure leaves the store as it was. A head's manifest records its
encoder's file hashes (config.encoder_files), and the service refuses the head if they change.
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

PARITY_ATOL = 1e-4
OPSET = 17
log = logging.getLogger("training.export")


def export_onnx(module: nn.Module, example: tuple[torch.Tensor, ...], path: Path,
                input_names: list[str], output_names: list[str],
                dynamic_axes: dict[str, dict[int, str]]) -> Path:
    """Export `module` (in eval mode) to one ONNX file with symbolic axes; returns the path.

    Example inputs should be at least 2 on every variable axis: the tracer may freeze an axis it
    sees at 1 into a constant. The saved graph is checked to have symbolic names on every axis
    listed in `dynamic_axes`.
    """
    import onnx

    module.eval()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, example, str(path), input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=OPSET, dynamo=False, do_constant_folding=True)
    graph = onnx.load(str(path)).graph
    for value in list(graph.input) + list(graph.output):
        for axis in dynamic_axes.get(value.name, {}):
            dim = value.type.tensor_type.shape.dim[axis]
            if not dim.dim_param:
                raise RuntimeError(f"{path.name}: axis {axis} of {value.name} was frozen at {dim.dim_value}")
    return path


def check_parity(module: nn.Module, path: Path, examples: Sequence[tuple[torch.Tensor, ...]],
                 input_names: list[str], atol: float = PARITY_ATOL, scales: Sequence[float] | None = None) -> float:
    """Largest |ONNX Runtime - torch| over every output of every example; raises above `atol`.

    `scales` divides each output's difference first: ADEM's terms are its score times beta (17 for the
    committed head), so their float32 rounding is measured in score units, as the score's is."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    module.eval()
    worst = 0.0
    for example in examples:
        with torch.no_grad():
            expected = module(*example)
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        got = session.run(None, {name: t.numpy() for name, t in zip(input_names, example)})
        refuse_non_finite(got, path)  # max() below would pass NaN over silently
        for k, (e, g) in enumerate(zip(expected, got)):
            scale = abs(scales[k]) if scales else 1.0
            worst = max(worst, float(np.max(np.abs(e.numpy() - g))) / scale if e.numel() else 0.0)
    if worst > atol:
        raise RuntimeError(f"{Path(path).name}: ONNX Runtime differs from torch by {worst:.2e} (> {atol:.0e})")
    return worst


def refuse_non_finite(outputs: Sequence[np.ndarray], path: Path) -> None:
    """A parity check's ONNX outputs must be finite: an AutoJudge run with alpha NaN passed one (a probe)."""
    if not all(np.all(np.isfinite(output)) for output in outputs):
        from training.core.cli import SetupError

        raise SetupError(f"{Path(path).name}: the graph gives non-finite outputs (a run with NaN weights?)")


# --- example inputs for the hierarchical encoder's graphs -----------------------------------------
def utterance_examples(vocab: int, max_tokens: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(tokens, lengths) at several shapes: batch 1, ragged batches, the longest utterances."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for batch, width in ((1, 1), (1, max_tokens), (3, 5), (8, max_tokens), (17, 12)):
        lengths = torch.randint(1, width + 1, (batch,), generator=g)
        lengths[0] = width
        tokens = torch.randint(4, vocab, (batch, width), generator=g)
        tokens[torch.arange(width).unsqueeze(0) >= lengths.unsqueeze(1)] = 0
        out.append((tokens, lengths))
    return out


def context_examples(dim: int, max_turns: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for batch, turns in ((1, 1), (1, max_turns), (4, 3), (9, max_turns), (2, 30)):
        count = torch.randint(1, turns + 1, (batch,), generator=g)
        count[0] = turns
        vectors = torch.randn((batch, turns, dim), generator=g)
        vectors[torch.arange(turns).unsqueeze(0) >= count.unsqueeze(1)] = 0.0
        out.append((vectors, count))
    return out


def head_examples(dim: int, count: int, seed: int = 0) -> list[tuple[torch.Tensor, ...]]:
    g = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn((batch, dim), generator=g) for _ in range(count)) for batch in (1, 2, 7, 300)]


# --- the store folders -----------------------------------------------------------------------------
def _fresh(folder: Path) -> Path:
    """Remove the artifacts of a previous export (not the README, which is rewritten too)."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.iterdir():
        if path.is_file() and path.suffix in (".onnx", ".npy", ".json"):
            path.unlink()
    return folder


def export_hred(checkpoint: Path, tokenizer_path: Path, folder: Path, version: str,
                card: dict[str, Any] | None = None) -> dict[str, float]:
    """The `hred-encoder` component: tokenizer.json + utterance_encoder.onnx + context_encoder.onnx.

    tokenizer.json is the run's with typographic quotes mapped to ASCII (`training.tokenizer.served`)."""
    from service.manifest import write_manifest
    from training import tokenizer as bpe
    from training.encoders.vhred import load_checkpoint

    model, extra = load_checkpoint(checkpoint)
    cfg = model.config
    folder = _fresh(Path(folder))
    # The served tokenizer reads ’ ‘ “ ” as ' and " (training/tokenizer.py `served` says why the run's
    # own tokenizer, which the encoder and heads were trained on, does not).
    bpe.save_served(tokenizer_path, folder / "tokenizer.json")
    parity: dict[str, float] = {}
    utt_examples = utterance_examples(cfg.vocab_size, cfg.max_tokens)
    export_onnx(model.utterance_encoder, utt_examples[3], folder / "utterance_encoder.onnx",
                ["tokens", "lengths"], ["vectors"],
                {"tokens": {0: "batch", 1: "time"}, "lengths": {0: "batch"}, "vectors": {0: "batch"}})
    parity["utterance_encoder.onnx"] = check_parity(model.utterance_encoder, folder / "utterance_encoder.onnx",
                                                    utt_examples, ["tokens", "lengths"])
    ctx_examples = context_examples(2 * cfg.utterance, cfg.max_turns)
    export_onnx(model.context_encoder, ctx_examples[3], folder / "context_encoder.onnx",
                ["vectors", "turns"], ["state"],
                {"vectors": {0: "batch", 1: "turns"}, "turns": {0: "batch"}, "state": {0: "batch"}})
    parity["context_encoder.onnx"] = check_parity(model.context_encoder, folder / "context_encoder.onnx",
                                                  ctx_examples, ["vectors", "turns"])
    config = {"max_tokens": cfg.max_tokens, "max_context_turns": cfg.max_turns - 1,
              "utterance_dim": 2 * cfg.utterance, "dimension": cfg.context, "vhred": cfg.to_dict(),
              "parity_max_abs_diff": parity, "pretraining": extra}
    write_manifest(folder, name=folder.name, version=version, kind="component", scorer="hred-encoder",
                   tokenizer="tokenizer.json", config=config, card=card or {})
    log.info("exported %s: parity %s", folder, parity)
    return parity


def export_head(head: nn.Module, n_inputs: int, input_names: list[str], folder: Path, filename: str,
                dim: int, write: Callable[[Path, dict[str, float]], None],
                outputs: Sequence[str] = ("score",), scales: Sequence[float] | None = None) -> dict[str, float]:
    """Export a scoring head over encoder vectors (inputs [batch, dim] each; outputs [batch] each,
    `score` first; `scales` as check_parity's)."""
    folder = _fresh(Path(folder))
    examples = head_examples(dim, n_inputs)
    export_onnx(head, examples[1], folder / filename, input_names, list(outputs),
                {n: {0: "batch"} for n in [*input_names, *outputs]})
    parity = {filename: check_parity(head, folder / filename, examples, input_names, scales=scales)}
    write(folder, parity)
    log.info("exported %s: parity %s", folder, parity)
    return parity


def record_encoder(folder: Path, files: dict[str, str]) -> None:
    """Add the sha256 of the encoder files a head was exported for to its manifest
    (config.encoder_files, as mh records minilm-l6's), which the service compares with the store's
    encoder at load (service/manifest.py encoder_drift). Done after the trainers' export_run, which
    write the rest of the manifest and do not take it."""
    from service.manifest import read_manifest

    path = Path(folder) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["config"]["encoder_files"] = files
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    read_manifest(folder)  # still a manifest the service reads


@contextmanager
def staging(store: Path) -> Iterator[Path]:
    """A hidden folder in `store` (the service skips names starting with '.') to build into;
    removed at the end, with whatever it holds."""
    store.mkdir(parents=True, exist_ok=True)
    for stale in store.glob(".export-*"):  # a killed export's (full copies of the old folders)
        log.warning("removing %s, left by an export that was stopped", stale)
        shutil.rmtree(stale, ignore_errors=True)
    stage = Path(tempfile.mkdtemp(prefix=".export-", dir=store))
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def publish(stage: Path, store: Path, names: list[str]) -> None:
    """Move the built folders from `stage` into `store`, each replacing the folder of that name."""
    for name in names:
        target = store / name
        if target.exists() or target.is_symlink():
            os.replace(target, stage / f"{name}.replaced")
        os.replace(stage / name, target)


def _served_encoder(store: Path, encoder_run: Any) -> tuple[dict[str, Any], int, str]:
    """The pre-training metrics, width and description of the encoder the heads will be served on."""
    from training import export_checks as checks

    if encoder_run is not None:
        return encoder_run.metrics, encoder_run.dimension, f"--vhred {encoder_run.folder}"
    found = checks.store_encoder_metrics(store)
    if found is None:
        raise checks.ExportError(f"{store} has no {checks.ENCODER}: export the encoder the heads were trained on "
                                 "with them (--vhred RUN)")
    return found[0], found[1], f"the {checks.ENCODER} in {store}"


def _write_encoder(encoder_run: Any, stage: Path, store: Path, version: str) -> None:
    from training import cards
    from training.export_checks import ENCODER

    if encoder_run is None:  # the heads are exported for the store's encoder: their cards read it
        shutil.copytree(store / ENCODER, stage / ENCODER)
        return
    folder = stage / ENCODER
    export_hred(encoder_run.folder / "model.pt", encoder_run.folder / "tokenizer.json", folder, version,
                card=cards.hred_card(encoder_run.metrics))
    config = json.loads((folder / "manifest.json").read_text())["config"]["vhred"]
    cards.write_readme(folder, cards.hred_readme(folder, encoder_run.metrics, config))


def _refuse_orphans(store: Path, files: dict[str, str], rewritten: set[str], vhred: Path) -> None:
    from training import export_checks as checks

    orphans = checks.orphaned_heads(store, files, rewritten)
    if orphans:
        runs = " ".join(f"--{name} RUN" for name in orphans)
        raise checks.ExportError(
            f"writing --vhred {vhred} would leave {', '.join(orphans)} in {store} on an encoder they were not "
            f"trained on; export them with it ({runs}, runs trained with --encoder {vhred}) or into another --store")


def main(argv: list[str]) -> int:
    from training import export_checks as checks
    from training.core.progress import setup_logging
    from training.core.cli import version

    parser = argparse.ArgumentParser(prog="python -m training export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=Path("model_store"), help="default: model_store")
    parser.add_argument("--vhred", type=Path, help="pre-training run folder (model.pt, tokenizer.json)")
    parser.add_argument("--adem", type=Path, help="ADEM run folder (head.pt, metrics.json)")
    parser.add_argument("--autojudge", type=Path, help="AutoJudge run folder (head.pt, metrics.json)")
    # Each artifact's version is its own: the encoder's 2026.11.1, trained with the dev hold-out, and
    # 2026.11.2, its tokenizer.json reading curly quotes as straight ones (2026-11-26); the heads'
    # 2026.11.2, early stopping by context (2026-11-23), and 2026.11.3, served on that tokenizer.
    # Defaults are the committed ones, so that `make train` reproduces model_store/ versions included.
    parser.add_argument("--version", type=version, default="2026.11.3", help="of the adem and autojudge heads")
    parser.add_argument("--encoder-version", type=version, default="2026.11.2", help="of hred-encoder")
    parser.add_argument("--log", type=Path, default=None, help="also write the log here (make train: runs/export.log)")
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
    with staging(args.store) as stage:
        _write_encoder(encoder_run, stage, args.store, args.encoder_version)
        files = checks.encoder_files(stage / checks.ENCODER) if (stage / checks.ENCODER).is_dir() else {}
        if encoder_run is not None:
            _refuse_orphans(args.store, files, {h.kind for h in heads}, args.vhred)
        for head in heads:
            module = importlib.import_module(f"training.{head.kind}.train")
            module.export_run(head.folder, stage / head.kind, args.version)
            record_encoder(stage / head.kind, files)
        publish(stage, args.store, ([checks.ENCODER] if encoder_run else []) + [h.kind for h in heads])
    log.info("wrote %s into %s", ", ".join(([checks.ENCODER] if encoder_run else []) + [h.kind for h in heads]),
             args.store)
    return 0
