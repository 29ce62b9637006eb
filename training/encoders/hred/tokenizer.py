"""The BPE tokenizer of the hierarchical encoder, with its normalisation, truncation and end token inside
tokenizer.json, so the service reproduces training's ids from the file alone.

Word starts are marked by a Metaspace "▁" and the alphabet is sorted before ids are assigned, so
training is deterministic; the served form (`served`) also maps typographic quotes to ASCII."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from training.core.cli import SetupError

PAD, UNK, BOS, EOS = "[PAD]", "[UNK]", "[BOS]", "[EOS]"
SPECIALS = [PAD, UNK, BOS, EOS]  # ids 0..3 in this order
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(4)
WORD_START = "▁"  # what Metaspace puts before every word


def train_bpe(texts: Iterable[str], vocab_size: int = 8000, max_tokens: int = 40,
              min_frequency: int = 2) -> Tokenizer:
    """A BPE tokenizer trained on `texts`; every encoding ends in [EOS] and has at most `max_tokens` ids."""
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                      strip_accents=False, lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.BertPreTokenizer(),
        pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always", split=False)])
    tokenizer.decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always", split=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=SPECIALS, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer=trainer)
    assert [tokenizer.token_to_id(t) for t in SPECIALS] == [PAD_ID, UNK_ID, BOS_ID, EOS_ID]
    tokenizer.post_processor = processors.TemplateProcessing(single=f"$A {EOS}",
                                                             special_tokens=[(EOS, EOS_ID)])
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


# Typographic quotes the served tokenizer reads as their ASCII forms (`served`).
QUOTES = {"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'}  # ’ ‘ “ ”


def served(tokenizer: Tokenizer) -> Tokenizer:
    """`tokenizer` with ’ ‘ mapped to ' and “ ” to " in front of its normaliser, everything else as it
    was: the tokenizer.json `export` writes into model_store/hred-encoder (training/encoders/hred/export.py).

    DailyDialog spells apostrophes both ways, so ’ is a token of its own and a curly apostrophe moves
    the heads' scores a lot, while phone keyboards type ’. The mapping is added at export, not in
    `train_bpe`: pre-training and the heads' training keep reading the run's own tokenizer.json, so
    `make train` reproduces the committed encoder and heads. Idempotent: a tokenizer that already maps
    them is returned as it is."""
    state = tokenizer.to_str()
    mapped = Tokenizer.from_str(state)
    current = json.loads(state)["normalizer"]
    if _maps_quotes(current):
        return mapped
    steps = [normalizers.Replace(curly, ascii_) for curly, ascii_ in QUOTES.items()]
    mapped.normalizer = normalizers.Sequence(steps + ([mapped.normalizer] if current else []))
    return mapped


def _maps_quotes(normalizer: dict | None) -> bool:
    """Whether a tokenizer.json `normalizer` already begins with QUOTES' replacements."""
    if not normalizer or normalizer.get("type") != "Sequence":
        return False
    found = [(n.get("pattern", {}).get("String"), n.get("content")) for n in normalizer["normalizers"][:len(QUOTES)]
             if n.get("type") == "Replace"]
    return found == list(QUOTES.items())


def save_served(run_tokenizer: Path, target: Path) -> Path:
    """Write the served form (`served`) of a run's tokenizer.json to `target`."""
    served(load(run_tokenizer)).save(str(target))
    return Path(target)


def encode(tokenizer: Tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids per text (never empty: at least [EOS])."""
    return [e.ids for e in tokenizer.encode_batch(texts)]


def save(tokenizer: Tokenizer, path: Path) -> None:
    tokenizer.save(str(path))


def load(path: Path) -> Tokenizer:
    """The run's tokenizer.json; a missing one is an OSError and an unreadable one a SetupError naming it
    (tokenizers raises a bare Exception for both, which reached users as a traceback)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers' own errors are plain Exception
        raise SetupError(f"{path} is not a readable tokenizer ({str(exc).strip()[:200]})") from exc
