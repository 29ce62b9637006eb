"""RUBER (Tao et al. 2018): a referenced and an unreferenced score, min-max normalised and blended.

s_R is the cosine of the [max-pool; min-pool] GloVe vectors of reply and reference (no training);
s_U is two BiGRU encoders (query, reply) over GloVe vectors and an MLP head on [q; r; q^T M r] with a
sigmoid, trained by negative sampling (ONNX graphs over embedded words, from the shared `glove-50d`).
Both are normalised with min-max constants from a calibration set (manifest `config`), clipped to
[0, 1], and blended by min, max, geometric or arithmetic mean (`options.blend`). Training calibrates
with the pooling and feature code here.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from service.components.cache import EncodeCache
from service.components.glove import GloveTable
from service.scorers.base import REFERENCE_FREE, REFERENCE_FREE_OPTION, Item, ScoreBatch, Scorer
from service.scorers.baselines.embedding import cosine
from service.scorers.ruber.blending import BLENDS, blend, normalise
from service.artifacts.batching import length_buckets
from service.text import words

WORD_WEIGHTS = ("none", "frequency")
# `options.word_weights: "frequency"` scales each word vector by a / (a + p(word)) before the pooling
# (Arora et al. 2017; WEIGHTS_FILE, from the training corpora's word counts). The paper pools by max and
# min because common words' vectors are pulled to the origin in training, so the extremes come from the
# informative words; GloVe's are not (the vector of "the" is as long as that of "basketball"), and the
# weights restore that premise. "none" is the paper's formula; the default is what did better on
# development data.
WEIGHTS_FILE = "word_weights.npy"


def pooled(vectors: np.ndarray) -> np.ndarray:
    """[max-pool; min-pool] of word vectors (n, d) -> (2d,); zeros when there is no word."""
    if not len(vectors):
        return np.zeros(2 * vectors.shape[1], dtype=np.float32)
    return np.concatenate([vectors.max(axis=0), vectors.min(axis=0)])


def referenced_score(reply: np.ndarray, reference: np.ndarray) -> float:
    """s_R: cosine of the pooled vectors; 0 when either side has no known word (no evidence)."""
    return cosine(pooled(reply), pooled(reference))


def query_text(context: list[str], turns: int) -> str:
    """The query the unreferenced model sees: the last `turns` context turns joined."""
    return " ".join(context[-turns:]) if context else ""


def word_ids(glove: GloveTable, text: str, max_words: int, keep: str) -> list[int]:
    """GloVe rows of the known words, cut to `max_words` keeping the 'last' (queries) or 'first' (replies)."""
    ids = glove.ids(words(text))
    return ids[-max_words:] if keep == "last" else ids[:max_words]


def embed_padded(vectors: np.ndarray, rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Padded [N, L, d] vectors and lengths [N]; an utterance with no known word is one zero vector."""
    lengths = np.asarray([max(1, len(r)) for r in rows], dtype=np.int64)
    out = np.zeros((len(rows), int(lengths.max()) if len(rows) else 1, vectors.shape[1]), dtype=np.float32)
    for i, r in enumerate(rows):
        if r:
            out[i, : len(r)] = vectors[r]
    return out, lengths


class Ruber(Scorer):
    computes = "referenced"
    default_options: ClassVar[dict[str, dict[str, Any]]] = {
        "blend": {"type": "string", "choices": list(BLENDS), "default": "arithmetic"},
        "components": {"type": "boolean", "default": False},
        "word_weights": {"type": "string", "choices": ["none"], "default": "none"},
        REFERENCE_FREE: REFERENCE_FREE_OPTION,
    }

    @property
    def context_turns(self) -> int | None:
        return self.query_turns  # s_U's query; s_R reads no context

    def _load(self) -> None:
        self._load_unreferenced()
        self.bounds = self.manifest.config["normalisation"]
        self.word_weights: np.ndarray | None = None
        if WEIGHTS_FILE in self.manifest.files:
            weights = np.load(self.manifest.path(WEIGHTS_FILE), allow_pickle=False)
            if weights.shape != (self.glove.vectors.shape[0],):
                raise ValueError(f"{self.name}: {WEIGHTS_FILE} has shape {weights.shape}, "
                                 f"glove-50d has {self.glove.vectors.shape[0]} words")
            if "s_ref_frequency" not in self.bounds:
                raise ValueError(f"{self.name}: {WEIGHTS_FILE} without normalisation.s_ref_frequency")
            self.word_weights = weights.astype(np.float32)
        offered = [w for w in self.option_spec["word_weights"]["choices"]
                   if w == "none" or self.word_weights is not None]
        if self.option_spec["word_weights"]["default"] not in offered:
            raise ValueError(f"{self.name}: default word_weights needs {WEIGHTS_FILE}")
        self.option_spec["word_weights"] = {**self.option_spec["word_weights"], "choices": offered}

    def _load_unreferenced(self) -> None:
        """What s_U reads: the GloVe table, the two BiGRU encoders and the head."""
        self.glove: GloveTable = self.components["glove-50d"]
        config = self.manifest.config
        self.query_turns = int(config.get("query_turns", 1))
        self.max_words = int(config.get("max_words", 128))
        self.query_encoder = self.runtime.session(self.manifest.path("query_encoder.onnx"))
        self.reply_encoder = self.runtime.session(self.manifest.path("reply_encoder.onnx"))
        self.head = self.runtime.session(self.manifest.path("head.onnx"))

    def _encode(self, session: Any, texts: list[str], keep: str) -> np.ndarray:
        """Encodings of `texts`, length-bucketed; padding is masked in the graph so buckets do not matter."""
        rows = [word_ids(self.glove, t, self.max_words, keep) for t in texts]
        out: np.ndarray | None = None
        for bucket in length_buckets([len(r) for r in rows], self.runtime.settings.batch_size):
            embedded, lengths = embed_padded(self.glove.vectors, [rows[i] for i in bucket])
            (vectors,) = session.run({"embedded": embedded, "lengths": lengths})
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[bucket] = vectors
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)

    def unreferenced(self, items: list[Item], cache: EncodeCache) -> np.ndarray:
        """Raw s_U in (0, 1) for each item (before normalisation)."""
        queries = [query_text(item.context, self.query_turns) for item in items]
        replies = [item.response for item in items]
        q = cache.get_many(f"{self.name}/query", queries, lambda t: self._encode(self.query_encoder, t, "last"))
        r = cache.get_many(f"{self.name}/reply", replies, lambda t: self._encode(self.reply_encoder, t, "first"))
        (scores,) = self.head.run_rows({"query": q, "reply": r})  # a score must not depend on the batch
        return np.asarray(scores, dtype=np.float64).reshape(-1)

    def _score_reference_free(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        """The paper's unreferenced metric s_U as the head returns it, in (0, 1): the min-max normalisation
        applied before blending clips at 0 and 1, which would tie the candidates a re-ranking most needs
        to order."""
        return ScoreBatch([float(s) for s in self.unreferenced(items, cache)] if items else [])

    def _vectors(self, text: str, word_weights: str) -> np.ndarray:
        if word_weights == "none":
            return self.glove.embed(words(text))
        ids = self.glove.ids(words(text))
        return self.glove.embed_ids(ids) * self.word_weights[ids, None]

    def referenced(self, items: list[Item], word_weights: str = "none") -> np.ndarray:
        """Raw s_R in [-1, 1] for each item."""
        return np.asarray([
            referenced_score(self._vectors(item.response, word_weights), self._vectors(item.reference or "", word_weights))
            for item in items
        ], dtype=np.float64)

    def reference_bounds(self, word_weights: str) -> list[float]:
        """The calibration constants of s_R as computed with these word weights."""
        return self.bounds["s_ref_frequency" if word_weights == "frequency" else "s_ref"]

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        if not items:
            return ScoreBatch([])
        weighting = options.get("word_weights", "none")
        s_ref = normalise(self.referenced(items, weighting), self.reference_bounds(weighting))
        s_unref = normalise(self.unreferenced(items, cache), self.bounds["s_unref"])
        scores = blend(s_ref, s_unref, options["blend"])
        details = None
        if options.get("components"):
            details = [{"s_ref": float(a), "s_unref": float(b)} for a, b in zip(s_ref, s_unref)]
        return ScoreBatch(list(scores), details)
