"""RUBER's unreferenced network (Tao et al. 2018): utterance encoders and one head class, kept apart.

The head only sees vectors, so another encoder can be trained with the same head: the paper's GloVe BiGRU
encoders give one vector per text; a sentence encoder gives turn vectors (`RuberHead.on_turns`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from training.core.bigru import BiGRU
from training.core.turn_heads import DIM, CopyPenalty, StartsFromNextTurn, bilinear
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


class RuberHead(StartsFromNextTurn, nn.Module):
    """RUBER's unreferenced score s_U in (0, 1) of a reply to its query.

    On vectors (the paper's, section 2.2): `RuberHead(dim, hidden)`, s_U = sigmoid(w2 tanh(W1 [q; r; q^T M r]
    + b1) + b2), M Xavier-initialised; forward(query, reply) -> s_U [batch].
    On turn vectors: `RuberHead.on_turns(pooling, hidden, dim)`, q pooled from the turns, M at the identity,
    s_U = sigmoid(s q^T M r + MLP([q; q^T M r; r]) - copy penalty), the MLP's output layer started at zero
    (so an untrained head is sigmoid(5 q^T M r)) and the copy penalty fixed at gamma 40;
    forward(context, context_mask, response, reference) -> {score, s_ref, s_unref}, s_ref = cos(r, reference)
    and score their mean."""

    referenced = True
    learns_from_ratings = False  # s_U learns by negative sampling alone (no human score)

    def __init__(self, dim: int = DIM, hidden: int = 256, *, pooling: str | None = None) -> None:
        super().__init__()
        self.on_vectors = pooling is None
        if self.on_vectors:
            # M as a plain matrix (nn.Bilinear does not export with the legacy exporter)
            self.M = nn.Parameter(torch.empty(dim, dim))
            nn.init.xavier_uniform_(self.M)
            self.hidden = nn.Linear(2 * dim + 1, hidden)
            self.out = nn.Linear(hidden, 1)
            return
        self.add_context_form(pooling, dim)
        self.mlp = nn.Sequential(nn.Linear(2 * dim + 1, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        # The MLP learns a correction to the direct path: started at random, it learned DailyDialog's topic
        # priors, which do not carry over to other domains.
        self.skip = nn.Parameter(torch.tensor(5.0))
        nn.init.zeros_(self.mlp[2].weight)
        nn.init.zeros_(self.mlp[2].bias)
        # Fixed: trained, negative sampling moves the penalty out of the way and copies of the last turn win.
        self.copy = CopyPenalty(gamma=40.0, trainable=False)
        self.prior = torch.eye(dim)

    @classmethod
    def on_turns(cls, pooling: str = "last", hidden: int = 256, dim: int = DIM) -> "RuberHead":
        """The head on a sentence encoder's turn vectors."""
        return cls(dim, hidden, pooling=pooling)

    def unreferenced(self, *inputs: torch.Tensor) -> torch.Tensor:
        """s_U of (query, reply) on vectors, or of (context, context_mask, response) on turn vectors."""
        if self.on_vectors:
            query, reply = inputs
            quadratic = ((query @ self.M) * reply).sum(dim=-1, keepdim=True)
            features = torch.cat([query, reply, quadratic], dim=-1)
            return torch.sigmoid(self.out(torch.tanh(self.hidden(features)))).squeeze(-1)
        context, context_mask, response = inputs
        c = self.pool(context, context_mask, response)
        quadratic = bilinear(c, self.M, response).unsqueeze(-1)
        logit = self.skip * quadratic + self.mlp(torch.cat([c, quadratic, response], dim=-1))
        logit = logit - self.copy(context, context_mask, response).unsqueeze(-1)
        return torch.sigmoid(logit).squeeze(-1)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        if self.on_vectors:
            return self.unreferenced(*inputs)
        context, context_mask, response, reference = inputs
        s_unref = self.unreferenced(context, context_mask, response)
        s_ref = (reference * response).sum(dim=-1)
        return {"score": (s_ref + s_unref) / 2, "s_ref": s_ref, "s_unref": s_unref}

    def regulariser(self) -> torch.Tensor:
        """On turn vectors: the mean pull of M towards its prior."""
        return (self.M - self.prior).abs().mean()


class UnreferencedScorer(nn.Module):
    """A query encoder, a reply encoder (separate weights, as Figure 2) and the head.

    An encoder needs `dim`, `collate(rows) -> batch` and `encode(batch) -> [N, dim]`.
    """

    def __init__(self, query_encoder: nn.Module, reply_encoder: nn.Module, head: RuberHead) -> None:
        super().__init__()
        self.query_encoder = query_encoder
        self.reply_encoder = reply_encoder
        self.head = head

    def forward(self, query_batch, reply_batch) -> torch.Tensor:
        return self.head(self.query_encoder.encode(query_batch), self.reply_encoder.encode(reply_batch))


def build_glove_scorer(vectors: np.ndarray, config: RuberConfig) -> UnreferencedScorer:
    query = GloveBiGRUEncoder(vectors, config.hidden)
    reply = GloveBiGRUEncoder(vectors, config.hidden)
    return UnreferencedScorer(query, reply, RuberHead(query.dim, config.mlp_hidden))


def margin_loss(positive: torch.Tensor, negative: torch.Tensor, margin: float) -> torch.Tensor:
    """J = max(0, Δ - s_U(q, r) + s_U(q, r⁻)), averaged over the batch (eq. 7)."""
    return torch.clamp(margin - positive + negative, min=0.0).mean()
