"""The mh and mh-selfplay sections of docs/evaluation.md: M_H's figures and the self-play table."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from training.core.docs_section import write_section
from training.mh import card


BEGIN, END = "<!-- mh:begin -->", "<!-- mh:end -->"
SELFPLAY_BEGIN, SELFPLAY_END = "<!-- mh-selfplay:begin -->", "<!-- mh-selfplay:end -->"


def write_docs(path: Path, result: dict[str, Any], command: str) -> None:
    """Replace (or append) the mh section of docs/evaluation.md."""
    d = result["data"]
    figures = card.figures(result, version="")
    texts = card.card(figures)
    counts = ", ".join(f"{n}: {d['ratings_per_bot'][n]}" for n in d["bots"])
    body = "\n".join([
        BEGIN,
        "M_H, the hybrid metric of Ghandeharioun et al. 2019 (model `mh`; card in `model_store/mh/README.md`).",
        "",
        f"Data: {d['convai2_conversations']} rated ConvAI2 human-bot conversations from {len(d['bots'])} bots "
        f"({counts}). Leave-bot-out: each bot's "
        "conversations are scored by the regression fitted on the other bots; the bot-level correlation is "
        "between each bot's mean out-of-fold M_H and its mean human rating.",
        "",
        card.measured(figures),
        "",
        "Each proxy alone (the bot-level columns correlate the bot's mean proxy with its mean rating):",
        "",
        figures["proxy_table"],
        "",
        "Coefficients and their stability across folds:",
        "",
        figures["stability_table"],
        "",
        f"Proxy rules: {texts['proxy_rules']}",
        "",
        f"Limitations: {card.TEMPLATES.phrase('gaming')}",
        "",
        f"Command: `{command}` ({result['seconds']:.0f} s on a {card.TEMPLATES.phrase('machine')}).",
        "",
        "Self-play (the paper's bot-level estimate): `python -m training selfplay --bot vhred|scripted:NAME|URL "
        "--conversations 100 --turns 10 [--docs docs/evaluation.md]` holds the conversations, scores each with `mh` "
        "(`variant: self-play`) and prints the mean with a bootstrap interval; an HTTP bot must answer "
        "`POST {\"history\": [...]}` with `{\"reply\": \"...\"}` (training/mh/bots.py); the scripted bots are the "
        "two of the limitations above.",
        "",
        "{selfplay}",
        END,
    ])
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    kept = re.search(re.escape(SELFPLAY_BEGIN) + ".*?" + re.escape(SELFPLAY_END), text, re.S)
    body = body.replace("{selfplay}", kept.group(0) if kept else f"{SELFPLAY_BEGIN}\n{SELFPLAY_END}")
    write_section(path, body, BEGIN, END)  # the self-play rows kept above survive a new fit


def write_selfplay_docs(path: Path, rows: dict[str, str]) -> None:
    """Add or update one line per bot in the self-play block of the mh section (kept by write_docs)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(SELFPLAY_BEGIN) + "\n(.*?)" + re.escape(SELFPLAY_END), re.S)
    found = pattern.search(text)
    if not found:
        raise ValueError(f"{path} has no {SELFPLAY_BEGIN} block: run `python -m training train-mh` first")
    lines = [line for line in found.group(1).splitlines() if line.strip()]
    table = {line.split(" | ")[0]: line for line in lines if line.startswith("| ") and not line.startswith("| bot |")
             and not line.startswith("|---")}
    table.update({f"| {bot}": row for bot, row in rows.items()})
    block = "\n".join([SELFPLAY_BEGIN, "| bot | M_H self-play (-B/B) | 95% bootstrap CI | conversations x turns | "
                        "failed | command |", "|---|---|---|---|---|---|", *table.values(), SELFPLAY_END])
    path.write_text(text[:found.start()] + block + text[found.end():], encoding="utf-8")
