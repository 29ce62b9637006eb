"""The shared sentence encoder (all-MiniLM-L6-v2 in ONNX): one 384-d unit vector per utterance.

Every model on this encoder asks for vectors through the request's EncodeCache, so a request
that scores with several models, or repeats an utterance across items, encodes each distinct
utterance once. Pooling and normalisation live inside the graph and padding is masked there,
so a text's vector does not depend on what else is in its batch.
"""
from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from service.components.base import Component, register_component
from service.runtime import length_buckets
from service.scorers.base import EncodeCache

log = logging.getLogger(__name__)

PRECISION_ENV = "DIALSCORE_ENCODER_PRECISION"
PRECISIONS = ("int8", "fp32")
MAX_BATCH = 64
MAX_TOKENS = 8192


@register_component("sentence-encoder")
class SentenceEncoder(Component):
    """Word pieces by `tokenizer.json`, truncated at the model's 256; embeddings by ONNX Runtime."""

    def _load(self) -> None:
        config = self.manifest.config
        self.max_length = int(config.get("max_length", 256))
        self.dim = int(config.get("dimension", 384))
        self.precision = self._choose_precision(config.get("files", {}))
        filename = self.filename = config.get("files", {}).get(self.precision, f"encoder-{self.precision}.onnx")
        self.tokenizer = Tokenizer.from_file(str(self.manifest.path(self.manifest.tokenizer or "tokenizer.json")))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_length)
        self.session = self.runtime.session(self.manifest.path(filename))

    def _choose_precision(self, files: dict[str, str]) -> str:
        """int8 by default (the committed CPU file); fp32 when asked for and built (GPU images)."""
        wanted = os.environ.get(PRECISION_ENV, "int8").strip().lower() or "int8"
        if wanted not in PRECISIONS:
            raise ValueError(f"{PRECISION_ENV}={wanted!r} is not one of {PRECISIONS}")
        if wanted == "fp32" and files.get("fp32") not in self.manifest.files:
            log.warning("%s: fp32 encoder not built (make encoder-fp32); using int8", self.name)
            return "int8"
        return wanted

    def sessions(self) -> list[Any]:
        return [self.session]

    def served_files(self) -> dict[str, Any]:
        # int8 and fp32 give scores up to 1.5e-2 of a range apart: a client comparing pods needs to know.
        return {"precision": self.precision, "file": self.filename}

    def encode(self, texts: list[str], cache: EncodeCache | None = None) -> np.ndarray:
        """(len(texts), 384) float32 unit vectors, rows in order; unseen texts only are run."""
        if cache is None:
            cache = EncodeCache()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return cache.get_many(self.name, list(texts), self._encode)

    def _encode(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in length_buckets(lengths, MAX_BATCH, MAX_TOKENS):
            width = max(lengths[i] for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                ids[row, : lengths[index]] = encodings[index].ids
                mask[row, : lengths[index]] = 1
            (vectors,) = self.session.run({"input_ids": ids, "attention_mask": mask})
            out[batch] = vectors.astype(np.float32)
        return out
