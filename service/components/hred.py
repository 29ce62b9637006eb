"""The shared hierarchical encoder of ADEM and AutoJudge (VHRED pre-trained, exported to ONNX).

`utterance_encoder.onnx` (BPE ids -> one vector per utterance, BiGRU) and `context_encoder.onnx`
(utterance vectors -> the context GRU's last state). A context's vector is the context encoder over
its last `max_context_turns` utterances; a reply's or reference's, the context encoder over that one
utterance (ADEM section 4). Both graphs mask padding exactly, so batching by length cannot change a score.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from service.components.base import Component
from service.components.cache import EncodeCache
from service.artifacts.batching import length_buckets


class HREDEncoder(Component):
    def _load(self) -> None:
        config = self.manifest.config
        self.max_tokens = int(config["max_tokens"])
        self.max_context_turns = int(config["max_context_turns"])
        self.utterance_dim = int(config["utterance_dim"])
        self.dim = int(config["dimension"])
        # Truncation and the final [EOS] are inside tokenizer.json (written by training).
        self.tokenizer = Tokenizer.from_file(str(self.manifest.path(self.manifest.tokenizer or "tokenizer.json")))
        self.tokenizer.no_padding()
        self.utterance_session = self.runtime.session(self.manifest.path("utterance_encoder.onnx"))
        self.context_session = self.runtime.session(self.manifest.path("context_encoder.onnx"))

    def sessions(self) -> list[Any]:
        return [self.utterance_session, self.context_session]

    # --- public ----------------------------------------------------------------------------------
    def encode_utterances(self, texts: list[str], cache: EncodeCache | None = None) -> np.ndarray:
        """(len(texts), utterance_dim) utterance-level vectors, rows in order."""
        if not texts:
            return np.zeros((0, self.utterance_dim), dtype=np.float32)
        return (cache or EncodeCache()).get_many(self.name + ":utterance", list(texts), self._utterances)

    def encode_responses(self, texts: list[str], cache: EncodeCache | None = None) -> np.ndarray:
        """(len(texts), dimension): each text alone through the context encoder (r and r_hat in ADEM)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        cache = cache or EncodeCache()
        return cache.get_many(self.name + ":single", list(texts),
                              lambda missing: self._contexts([[t] for t in missing], cache))

    def encode_contexts(self, contexts: list[list[str]], cache: EncodeCache | None = None) -> np.ndarray:
        """(len(contexts), dimension): the context encoder's last state over each context's recent turns.

        Memoised per request by the turns the encoder reads (JSON of the recent turns: unambiguous),
        so adem and autojudge on one request, or items sharing a context, run the graph once each."""
        if not contexts:
            return np.zeros((0, self.dim), dtype=np.float32)
        cache = cache or EncodeCache()
        keys = [json.dumps(self._recent(list(c)), ensure_ascii=False) for c in contexts]
        return cache.get_many(self.name + ":context", keys,
                              lambda missing: self._contexts([json.loads(k) for k in missing], cache))

    def _recent(self, context: list[str]) -> list[str]:
        return context[-self.max_context_turns:] if context else [""]

    # --- graphs ------------------------------------------------------------------------------------
    def _utterances(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        out = np.zeros((len(texts), self.utterance_dim), dtype=np.float32)
        for batch in length_buckets(lengths, self.runtime.settings.batch_size):
            width = max(lengths[i] for i in batch)
            tokens = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                tokens[row, : lengths[index]] = encodings[index].ids
            (vectors,) = self.utterance_session.run({"tokens": tokens, "lengths": np.asarray(
                [lengths[i] for i in batch], dtype=np.int64)})
            out[batch] = vectors
        return out

    def _contexts(self, contexts: list[list[str]], cache: EncodeCache) -> np.ndarray:
        recent = [self._recent(c) for c in contexts]
        texts = list(dict.fromkeys(t for c in recent for t in c))
        vectors = dict(zip(texts, self.encode_utterances(texts, cache)))
        turns = [len(c) for c in recent]
        out = np.zeros((len(contexts), self.dim), dtype=np.float32)
        for batch in length_buckets(turns, self.runtime.settings.batch_size):
            width = max(turns[i] for i in batch)
            packed = np.zeros((len(batch), width, self.utterance_dim), dtype=np.float32)
            for row, index in enumerate(batch):
                for col, text in enumerate(recent[index]):
                    packed[row, col] = vectors[text]
            (states,) = self.context_session.run({"vectors": packed, "turns": np.asarray(
                [turns[i] for i in batch], dtype=np.int64)})
            out[batch] = states
        return out
