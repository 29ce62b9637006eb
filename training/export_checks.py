"""What `python -m training export` checks before it writes anything into a store: each input is what its
option says, a head was trained on the encoder it will be served with, and a new encoder leaves no head
in the store on an encoder it was not trained on. Each refusal is an ExportError (one line, exit 2)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.adem import export as adem_export
from training.autojudge import export as autojudge_export
from training.core.cli import SetupError
from training.core.heads import IDENTITY_FIELDS
from training.encoders.hred import tokenizer as bpe
from training.encoders.hred.model import load_checkpoint

ENCODER = "hred-encoder"
HEADS = ("adem", "autojudge")
LABELS = {"adem": "ADEM", "autojudge": "AutoJudge"}
LOAD_RUN = {"adem": adem_export.load_run, "autojudge": autojudge_export.load_run}


class ExportError(SetupError):
    """An export refused; the message says what is wrong and what to run instead."""


@dataclass(frozen=True)
class EncoderRun:
    """A finished pre-training run: its metrics.json (== the checkpoint's extra) and width."""

    folder: Path
    metrics: dict[str, Any]
    dimension: int


@dataclass(frozen=True)
class HeadRun:
    kind: str
    folder: Path
    metrics: dict[str, Any]
    dimension: int


def _read_json(path: Path, option: str) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExportError(f"{option} {path.parent}: no {path.name}; is it a finished run folder?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ExportError(f"{option} {path.parent}: {path.name} is not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ExportError(f"{option} {path.parent}: {path.name} does not hold an object")
    return raw


def read_encoder_run(folder: Path) -> EncoderRun:
    """A pre-training run export can publish: finished (metrics.json written by the same run as
    model.pt, not a step checkpoint) and with the tokenizer its model was trained with."""
    folder = Path(folder)
    if not (folder / "model.pt").is_file():
        raise ExportError(f"--vhred {folder}: no model.pt; is it a pre-training run folder?")
    model, extra = load_checkpoint(folder / "model.pt")
    if "steps_done" in extra:
        raise ExportError(f"--vhred {folder}: model.pt is a checkpoint of an unfinished run (stopped after step "
                          f"{extra['steps_done']}); finish it with `python -m training pretrain --finish` and the "
                          "run's own options, or run it again")
    metrics = _read_json(folder / "metrics.json", "--vhred")
    if extra != metrics:
        raise ExportError(f"--vhred {folder}: model.pt and metrics.json come from different runs (an interrupted "
                          "rerun into the same folder?); run it again")
    tokenizer = bpe.load(folder / "tokenizer.json")
    if tokenizer.get_vocab_size() != model.config.vocab_size:
        raise ExportError(f"--vhred {folder}: tokenizer.json has {tokenizer.get_vocab_size()} pieces, model.pt was "
                          f"trained on {model.config.vocab_size}: they come from different runs; run it again")
    return EncoderRun(folder, metrics, int(model.config.context))


def _head_kind(metrics: dict[str, Any]) -> str | None:
    """Which trainer wrote this metrics.json: ADEM's `training` is per variant, AutoJudge's has
    the cross-validations."""
    if "cross_validation" in metrics:
        return "autojudge"
    training = metrics.get("training")
    if isinstance(training, dict) and "adem" in training:
        return "adem"
    return None


def _head_dimension(kind: str, folder: Path) -> int:
    """The head's input width, from head.pt loaded as its export loads it."""
    try:
        loaded = LOAD_RUN[kind](folder)
    except OSError:
        raise
    except Exception as exc:  # a corrupt or foreign head.pt: torch's RuntimeError, KeyError, ...
        raise ExportError(f"--{kind} {folder}: head.pt is not a readable {LABELS[kind]} head "
                          f"({type(exc).__name__}: {str(exc).strip()[:200]})") from exc
    head = loaded[0]["adem"] if kind == "adem" else loaded[0]
    return int(head.mean.shape[0] if kind == "adem" else head.M.shape[0])


def read_head_run(kind: str, folder: Path) -> HeadRun:
    """A head run export can publish: of this kind, trained on at least one item, head.pt readable."""
    folder = Path(folder)
    metrics = _read_json(folder / "metrics.json", f"--{kind}")
    found = _head_kind(metrics)
    if found != kind:
        what = f"an {LABELS[found]} run" if found else "not a head run"
        raise ExportError(f"--{kind} {folder}: its metrics.json is {what}, not {LABELS[kind]}'s")
    if not metrics.get("train_items"):
        raise ExportError(f"--{kind} {folder}: trained on 0 items (sets {', '.join(metrics.get('sets', []))}"
                          f"{'; ADEM needs sets with references' if kind == 'adem' else ''}): nothing to export")
    return HeadRun(kind, folder, metrics, _head_dimension(kind, folder))


def encoder_identity(metrics: dict[str, Any]) -> dict[str, Any]:
    """What tells pre-training runs apart in what the heads record: corpus fingerprint, steps, seed."""
    return {"train_fingerprint": metrics.get("train_fingerprint"), **{k: metrics.get(k) for k in IDENTITY_FIELDS}}


def trained_on(head: HeadRun) -> dict[str, Any]:
    """The identity of the encoder run a head was trained on, as its metrics.json recorded it."""
    recorded = head.metrics.get("encoder_metrics") or {}
    return {"train_fingerprint": head.metrics.get("encoder_fingerprint"),
            **{k: recorded.get(k) for k in IDENTITY_FIELDS}}


def store_encoder_metrics(store: Path) -> tuple[dict[str, Any], int] | None:
    """The store's hred-encoder: the pre-training metrics its manifest carries and its width."""
    path = Path(store) / ENCODER / "manifest.json"
    if not path.is_file():
        return None
    config = _read_json(path, "--store").get("config") or {}
    return dict(config.get("pretraining") or {}), int(config.get("dimension") or 0)


def check_head_encoder(head: HeadRun, encoder: dict[str, Any], dimension: int, where: str) -> None:
    """Refuse a head whose recorded encoder is not `encoder` (the pre-training metrics of the
    encoder it would be served with, described by `where`)."""
    want = trained_on(head)
    if want["train_fingerprint"] is None:
        raise ExportError(f"--{head.kind} {head.folder}: records no encoder fingerprint (its --encoder had no "
                          "metrics.json), so it cannot be matched to an encoder; train it on a finished run")
    have = encoder_identity(encoder)
    if want != have or head.dimension != dimension:
        raise ExportError(f"--{head.kind} {head.folder}: trained on another encoder ({_describe(want, head.dimension)}) "
                          f"than {where} ({_describe(have, dimension)}); train it on that encoder, or export the "
                          "encoder it was trained on with it (--vhred RUN)")


def _describe(identity: dict[str, Any], dimension: int) -> str:
    weights = identity.get("weights_sha256")
    return (f"corpus {identity['train_fingerprint']}, {identity['steps']} steps, seed {identity['seed']}, {dimension}-d"
            + (f", weights {weights[:12]}" if weights else ""))


def encoder_files(encoder_folder: Path) -> dict[str, str]:
    """sha256 of every file of an exported encoder (its manifest's record): what a head's manifest
    keeps as `config.encoder_files` and the service compares (service/artifacts/manifest.py encoder_drift)."""
    files = _read_json(Path(encoder_folder) / "manifest.json", "--store").get("files") or {}
    return {name: entry["sha256"] for name, entry in sorted(files.items()) if not entry.get("optional")}


def orphaned_heads(store: Path, new_files: dict[str, str], rewritten: set[str]) -> list[str]:
    """Heads in `store` that writing an encoder with `new_files` would leave on an encoder they
    were not trained on: those not rewritten in this export whose recorded encoder files differ
    (a head recording none is taken to be on the store's present encoder)."""
    store = Path(store)
    present = encoder_files(store / ENCODER) if (store / ENCODER / "manifest.json").is_file() else {}
    out = []
    for name in HEADS:
        path = store / name / "manifest.json"
        if name in rewritten or not path.is_file():
            continue
        recorded = (_read_json(path, "--store").get("config") or {}).get("encoder_files") or present
        if recorded != new_files:
            out.append(name)
    return out
