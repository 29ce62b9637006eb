"""hred-encoder's card, and what the cards of the heads served on it (adem, autojudge) share: figures read from
the runs' metrics.json files (never typed in), shown as the templates in cards/ show them."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from training.core.card import Templates, render, render_fields, terms_line
from training.data.judgements import SETS

TEMPLATES = Templates(__file__)
NAME = "hred-encoder"
TOKENIZER_CODE = "training/encoders/hred/tokenizer.py"  # the tokenizer.json mapping the card names


def fmt(x: Any) -> str:
    """A figure as a card shows it: floats to three decimals, "–" where undefined."""
    return "–" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def context_turns(encoder_folder: Path) -> int:
    """How many context turns the exported encoder keeps (from its manifest; 7 if not exported here)."""
    path = Path(encoder_folder) / "manifest.json"
    return int(json.loads(path.read_text())["config"]["max_context_turns"]) if path.is_file() else 7


def licences(sets: list[str]) -> str:
    """The licence of each judged set a head read (and DailyDialog's, where a set is drawn from it)."""
    parts = [f"{s}: {SETS[s].licence.split('; ')[0]}" for s in sets if s in SETS]
    if any("DailyDialog" in SETS[s].licence for s in sets if s in SETS):
        parts.append(TEMPLATES.phrase("dailydialog_sets"))
    return "; ".join(parts)


def dev_summary(dev: Mapping[str, Any], model: str) -> dict[str, dict[str, Any]]:
    """A head's item-level dev figures per set, as its manifest's card keeps them."""
    return {name: {"pearson": rows[model]["item"]["pearson"], "spearman": rows[model]["item"]["spearman"],
                   "n": rows[model]["item"]["n"]} for name, rows in dev.items()}


def dev_table(dev: Mapping[str, Any]) -> str:
    """Every head and baseline of a training run on each dev set, item and system level."""
    lines = ["| set | metric | n | Pearson r | Spearman rho | system-level Pearson (systems) |",
             "|---|---|---|---|---|---|"]
    for name, rows in dev.items():
        for metric, row in rows.items():
            system = row.get("system")
            sys_text = f"{fmt(system['pearson'])} ({system['systems']})" if system else "–"
            lines.append(f"| {name} | {metric} | {row['item']['n']} | {fmt(row['item']['pearson'])} | "
                         f"{fmt(row['item']['spearman'])} | {sys_text} |")
    return "\n".join(lines)


def file_names(folder: Path) -> str:
    return ", ".join(f"`{p.name}`" for p in sorted(Path(folder).iterdir())
                     if p.suffix in (".onnx", ".json", ".npy") and p.name != "manifest.json")


def shared_figures(folder: Path, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """What the cards of hred-encoder and of the heads on it read alike of a run: its time and seed, the
    pre-training command of its encoder, the folder's files."""
    encoder = metrics.get("encoder_metrics") or metrics
    return {"minutes": metrics["minutes"], "minutes_value": metrics["minutes"], "seed": metrics["seed"],
            "files": file_names(folder),
            "pretrain_command": TEMPLATES.phrase("pretrain_command", steps=encoder.get("steps") or 1300,
                                                 kl_anneal_steps=encoder.get("kl_anneal_steps") or 400)}


def head_figures(folder: Path, metrics: Mapping[str, Any], parity: Mapping[str, float], dim: int,
                 turns: int) -> dict[str, Any]:
    """The figures every head on hred-encoder shows: its run's sets, items and licences, the ONNX parity."""
    return {**shared_figures(folder, metrics), "sets": ", ".join(metrics["sets"]), "train_items": metrics["train_items"],
            "licences": licences(metrics["sets"]), "parity": dict(parity), "dim": dim, "turns": turns}


def card_figures(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The figures of hred-encoder's manifest card: its pre-training run's metrics.json."""
    held, left_out = metrics["held_out_dailydialog_validation"], metrics.get("dev_text_dialogues_left_out")
    return {"sources": ", ".join(metrics["sources"]), "train_dialogues": metrics["train_dialogues"],
            "dev_text_dialogues_left_out": left_out if left_out is not None else "those",
            "minutes_value": metrics["minutes"],
            "held_out_perplexity": {"dailydialog_validation_bound": round(held["ppl_bound"], 2),
                                    "dailydialog_validation_nll_only": round(held["ppl_nll"], 2)}}


def figures(folder: Path, metrics: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """The figures of hred-encoder's card: its pre-training run's metrics.json, its model config, its folder."""
    held = metrics["held_out_dailydialog_validation"]
    left_out, repeats = metrics.get("dev_text_dialogues_left_out"), metrics.get("validation_repeats_left_out")
    files = "\n".join(f"- `{p.name}` ({p.stat().st_size / 1024:.0f} KiB)" for p in sorted(Path(folder).iterdir())
                      if p.suffix in (".onnx", ".json", ".npy") and p.name != "manifest.json")
    return {
        **shared_figures(folder, metrics), **card_figures(metrics), "files": files, "tokenizer_code": TOKENIZER_CODE,
        **{key: metrics[key] for key in ("kl_anneal_steps", "steps", "train_dialogues", "train_windows",
                                         "train_fingerprint", "lr", "batch_size", "epochs")},
        **{key: config[key] for key in ("max_tokens", "vocab_size", "embedding", "utterance", "latent", "decoder",
                                        "word_drop")},
        "utterance_dim": 2 * config["utterance"], "context_dim": config["context"], "turns": config["max_turns"] - 1,
        "held_out_text": (TEMPLATES.phrase("held_out", left_out=left_out) if left_out is not None
                          else TEMPLATES.phrase("held_out_none")),
        "valid_text": (TEMPLATES.phrase("valid", repeats=repeats) if repeats is not None
                       else TEMPLATES.phrase("valid_overlapping")),
        "held_out_tokens": int(held["tokens"]), "ppl_bound": f"{held['ppl_bound']:.2f}",
        "ppl_nll": f"{held['ppl_nll']:.2f}", "kl_per_token": f"{held['kl_per_token']:.3f}"}


def card(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's card of hred-encoder (figures: card_figures or figures)."""
    return render_fields(TEMPLATES.card(NAME), {**TEMPLATES.phrases(), **figures})


def readme(figures: Mapping[str, Any]) -> str:
    return render(TEMPLATES.readme(NAME), {**TEMPLATES.phrases(), **figures, "terms": terms_line(TEMPLATES.card(NAME))})
