"""Conversation-level human ratings of human-bot dialogues (ConvAI2, iEval, ConTurE) as `Rated`
conversations, with the bot's id where the data names it (leave-bot-out needs it)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from training.data.corpora import DEFAULT_DATA_DIR

DEFAULT_ROOT = DEFAULT_DATA_DIR / "judgements"  # follows DIALSCORE_DATA_DIR, as every other loader
CONVAI2_FILES = ("data_intermediate.json", "data_volunteers.json")


@dataclass(frozen=True)
class Rated:
    dataset: str
    id: str
    bot: str | None
    speakers: list[str]  # "user" | "bot"
    texts: list[str]
    rating: float
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def bot_turns(self) -> list[str]:
        return [t for s, t in zip(self.speakers, self.texts) if s == "bot"]


def exchanges(speakers: list[str]) -> int:
    """The number of bot turns that answer a user turn."""
    return sum(1 for i in range(1, len(speakers)) if speakers[i] == "bot" and speakers[i - 1] == "user")


def _usable(speakers: list[str], min_pairs: int) -> bool:
    """At least `min_pairs` user-then-bot exchanges (the paper's raters chatted for at least 3 turns)."""
    return exchanges(speakers) >= min_pairs


def load_convai2(root: Path = DEFAULT_ROOT, min_pairs: int = 1) -> list[Rated]:
    """Rated ConvAI2 human-bot dialogues with a bot id (file/bot)."""
    out: list[Rated] = []
    for filename in CONVAI2_FILES:
        records = json.loads((Path(root) / "convai2_human_bot" / filename).read_text(encoding="utf-8"))
        round_name = filename.removeprefix("data_").removesuffix(".json")
        for n, record in enumerate(records):
            if record.get("eval_score") is None:
                continue
            bots = [p["user_id"] for p in (record["participant1_id"], record["participant2_id"])
                    if p.get("class") == "Bot"]
            if len(bots) != 1:
                continue
            turns = [t for t in record["dialog"] if str(t.get("text", "")).strip()]
            speakers = ["bot" if t.get("sender_class") == "Bot" else "user" for t in turns]
            if not _usable(speakers, min_pairs):
                continue
            out.append(Rated("convai2", f"{round_name}/{n}", f"{round_name}/{bots[0]}", speakers,
                             [str(t["text"]).strip() for t in turns], float(record["eval_score"])))
    return out


def load_ieval(root: Path = DEFAULT_ROOT, min_pairs: int = 1) -> list[Rated]:
    """iEval chat logs ("- " lines, the worker first), rated per bot colour."""
    records = json.loads((Path(root) / "ieval" / "ieval_data.json").read_text(encoding="utf-8"))
    likert = ("P", "A", "EU", "ER", "L", "S")
    out: list[Rated] = []
    for record in records:
        for valence in ("positive", "negative"):
            block = record.get(valence) or {}
            for colour, chat in block.items():
                if not isinstance(chat, dict) or "chat_log" not in chat:
                    continue
                texts = [line[2:].strip() if line.startswith("- ") else line.strip()
                         for line in chat["chat_log"].split("\n")]
                texts = [t for t in texts if t]
                speakers = ["user" if i % 2 == 0 else "bot" for i in range(len(texts))]
                if not _usable(speakers, min_pairs):
                    continue
                extra = {k: float(chat[k]) for k in likert if isinstance(chat.get(k), (int, float))}
                extra["likert_mean"] = sum(extra.values()) / max(1, len(extra))
                out.append(Rated("ieval", f"{record['part']}/{valence}/{colour}", f"ieval/{colour}", speakers,
                                 texts, float(chat["Rating"]), extra))
    return out


def load_conture(root: Path = DEFAULT_ROOT, min_pairs: int = 1) -> list[Rated]:
    """ConTurE dialogues with the mean dialogue-level "human (overall)" rating."""
    records = json.loads((Path(root) / "conture" / "data.json").read_text(encoding="utf-8"))
    out: list[Rated] = []
    for record in records:
        speakers: list[str] = []
        texts: list[str] = []
        for turn in record["turns"]:
            for key, speaker, prefix in (("user", "user", "User:"), ("chatbot", "bot", "Chatbot:")):
                text = str(turn.get(key) or "").strip()
                text = text.removeprefix(prefix).strip()
                if text:
                    speakers.append(speaker)
                    texts.append(text)
        ratings = [r["human (overall)"] for r in record.get("dialog_ratings", []) if "human (overall)" in r]
        if not ratings or not _usable(speakers, min_pairs):
            continue
        out.append(Rated("conture", str(record["dialog_id"]), None, speakers, texts,
                         sum(ratings) / len(ratings)))
    return out
