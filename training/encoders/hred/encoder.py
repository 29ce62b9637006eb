"""The pre-trained hierarchical encoder as the heads see it: texts in, vectors out.

Mirrors `service.components.hred.HREDEncoder` but reads the run's own tokenizer.json (no quote mapping,
training/encoders/hred/tokenizer.py `served`), the one the committed heads were fitted on, so `make train`
reproduces them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from training.encoders.hred import tokenizer as bpe
from training.encoders.hred.model import VHRED, load_finished


class HREDTextEncoder:
    """The frozen VHRED encoders, batched; `dim` is the context state's width."""

    def __init__(self, model: VHRED, tokenizer, batch_size: int = 128) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_context_turns = model.config.max_turns - 1
        self.dim = model.config.context
        self._utterances: dict[str, torch.Tensor] = {}

    @classmethod
    def from_run(cls, folder: Path) -> "HREDTextEncoder":
        model, _ = load_finished(Path(folder))
        return cls(model, bpe.load(Path(folder) / "tokenizer.json"))

    @torch.no_grad()
    def _encode_utterances(self, texts: list[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self._utterances]
        missing.sort(key=len)
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start:start + self.batch_size]
            ids = bpe.encode(self.tokenizer, chunk)
            width = max(len(i) for i in ids)
            tokens = torch.zeros((len(ids), width), dtype=torch.long)
            for row, seq in enumerate(ids):
                tokens[row, :len(seq)] = torch.tensor(seq)
            vectors = self.model.utterance_encoder(tokens, torch.tensor([len(i) for i in ids]))
            self._utterances.update(zip(chunk, vectors))

    @torch.no_grad()
    def encode_contexts(self, contexts: list[list[str]]) -> np.ndarray:
        recent = [(c[-self.max_context_turns:] if c else [""]) for c in contexts]
        self._encode_utterances([t for c in recent for t in c])
        out = np.zeros((len(recent), self.dim), dtype=np.float32)
        order = sorted(range(len(recent)), key=lambda i: len(recent[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            width = max(len(recent[i]) for i in batch)
            packed = torch.zeros((len(batch), width, self.model.config.utterance * 2))
            for row, index in enumerate(batch):
                for col, text in enumerate(recent[index]):
                    packed[row, col] = self._utterances[text]
            turns = torch.tensor([len(recent[i]) for i in batch])
            out[batch] = self.model.context_encoder(packed, turns).numpy()
        return out

    def encode_responses(self, texts: list[str]) -> np.ndarray:
        return self.encode_contexts([[t] for t in texts])
