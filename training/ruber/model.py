"""The unreferenced RUBER network: utterance encoders and a head, kept apart.

The head only sees two vectors, so another encoder (MiniLM's, say) can be trained with the
same head and trainer: anything with `dim` and `encode(batch) -> [N, dim]` fits.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from training.core.bigru import BiGRU
from training.ruber.data import collate


@dataclass
class RuberConfig:
    hidden: int = 128  # GRU units per direction; an utterance vector has 2 * hidden
    mlp_hidden: int = 128  # the MLP's tanh layer
    margin: float = 0.5  # Δ of the margin loss (eq. 7)
    query_turns: int = 1  # context turns joined into the query (the paper: 1, the previous utterance)
    max_words: int = 128  # queries keep their last words, replies their first

    def to_dict(self) -> dict:
        return asdict(self)


class GloveBiGRUEncoder(nn.Module):
    """BiGRU final states over frozen GloVe vectors: [N, L] word rows + lengths -> [N, 2H].

    The table's last row is a zero vector used for padding and for utterances with no known
    word (the service feeds one zero vector then). Training sees it for queries; pairs whose reply
    has no known word are dropped (training/ruber/data.py), so the reply encoder meets it only when serving.
    """

    def __init__(self, vectors: np.ndarray, hidden: int) -> None:
        super().__init__()
        table = np.concatenate([vectors, np.zeros((1, vectors.shape[1]), dtype=np.float32)])
        self.embedding = nn.Embedding.from_pretrained(torch.from_numpy(table), freeze=True)
        self.pad_id = table.shape[0] - 1
        self.rnn = BiGRU(vectors.shape[1], hidden)
        self.dim = 2 * hidden

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The exported computation: embedded words [N, L, E] and lengths [N] -> [N, 2H]."""
        return self.rnn(embedded, lengths)

    def collate(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """A batch for `encode` from per-utterance GloVe rows."""
        return collate(rows, self.pad_id)

    def encode(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        ids, lengths = batch
        return self(self.embedding(ids), lengths)


class UnreferencedHead(nn.Module):
    """s_U = sigmoid(w2 · tanh(W1 [q; r; qᵀMr] + b1) + b2) (Tao et al. 2018, section 2.2)."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        # M as a plain matrix (nn.Bilinear does not export with the legacy exporter)
        self.M = nn.Parameter(torch.empty(dim, dim))
        nn.init.xavier_uniform_(self.M)
        self.hidden = nn.Linear(2 * dim + 1, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, query: torch.Tensor, reply: torch.Tensor) -> torch.Tensor:
        quadratic = ((query @ self.M) * reply).sum(dim=-1, keepdim=True)
        features = torch.cat([query, reply, quadratic], dim=-1)
        return torch.sigmoid(self.out(torch.tanh(self.hidden(features)))).squeeze(-1)


class UnreferencedScorer(nn.Module):
    """A query encoder, a reply encoder (separate weights, as Figure 2) and the head.

    An encoder needs `dim`, `collate(rows) -> batch` and `encode(batch) -> [N, dim]`.
    """

    def __init__(self, query_encoder: nn.Module, reply_encoder: nn.Module, head: UnreferencedHead) -> None:
        super().__init__()
        self.query_encoder = query_encoder
        self.reply_encoder = reply_encoder
        self.head = head

    def forward(self, query_batch, reply_batch) -> torch.Tensor:
        return self.head(self.query_encoder.encode(query_batch), self.reply_encoder.encode(reply_batch))


def build_glove_scorer(vectors: np.ndarray, config: RuberConfig) -> UnreferencedScorer:
    query = GloveBiGRUEncoder(vectors, config.hidden)
    reply = GloveBiGRUEncoder(vectors, config.hidden)
    return UnreferencedScorer(query, reply, UnreferencedHead(query.dim, config.mlp_hidden))


def margin_loss(positive: torch.Tensor, negative: torch.Tensor, margin: float) -> torch.Tensor:
    """J = max(0, Δ - s_U(q, r) + s_U(q, r⁻)), averaged over the batch (eq. 7)."""
    return torch.clamp(margin - positive + negative, min=0.0).mean()
