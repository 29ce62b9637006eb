"""The shared sentence encoder (all-MiniLM-L6-v2 in ONNX): one 384-d unit vector per utterance.

Every model on this encoder asks for vectors through the request's EncodeCache, so a request
that scores with several models, or repeats an utterance across items, encodes each distinct
utterance once. Pooling and normalisation live inside the graph and padding is masked there,
so a text's vector does not depend on what else is in its batch, to the bit: the contract says
the same input gives the same score whatever else is in the batch. Masking alone gave that only
to float32 rounding (3e-8 per dimension, 2.4e-7 in a score after a head), because ONNX
Runtime's kernels sum in an order set by the tensor's shape: by the padded width (attention
sums over it) and by whether the batch holds one row or more. So every text runs at a width set
by its own length (`padded_width`) among texts of that width only, and a lone text runs beside
a copy of itself; with these two rules the batch's other rows changed no bit in any test.
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


def choose_precision(requested: str, cuda: bool, fp32_built: bool) -> str:
    """The encoder file to serve: `auto` (the default) is fp32 on CUDA where built, else int8.

    int8 is the committed CPU file, where ONNX Runtime runs it with int8 activations (fast on
    CPUs); on CUDA it runs in float with one node sent back to the CPU, so a GPU worker is
    better served by the fp32 file, whose scores match the CPU's fp32 within 1e-6 (docs/gpu.md).
    """
    requested = requested.strip().lower() or "auto"
    if requested not in PRECISIONS + ("auto",):
        raise ValueError(f"{PRECISION_ENV}={requested!r} is not one of {PRECISIONS + ('auto',)}")
    wanted = ("fp32" if cuda else "int8") if requested == "auto" else requested
    return wanted if wanted == "int8" or fp32_built else "int8"
MAX_TOKENS = 8192
WIDTH_STEP = 8  # widths are multiples of this: at most 7 padded word pieces a text (13% of a typical 20)


def padded_width(length: int) -> int:
    """The width a text of `length` word pieces always runs at, whatever shares its batch."""
    return -(-max(length, 1) // WIDTH_STEP) * WIDTH_STEP


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
        requested = os.environ.get(PRECISION_ENV, "auto")
        cuda = "CUDAExecutionProvider" in self.runtime.providers
        fp32_built = files.get("fp32") in self.manifest.files
        chosen = choose_precision(requested, cuda, fp32_built)
        if chosen == "int8" and choose_precision(requested, cuda, True) == "fp32":
            log.warning("%s: fp32 encoder not built (make encoder-fp32); using int8", self.name)
        return chosen

    def sessions(self) -> list[Any]:
        return [self.session]

    def served_files(self) -> dict[str, Any]:
        # int8 and fp32 give scores up to 1.5e-2 of a range apart: a client comparing pods needs to know.
        return {"precision": self.precision, "file": self.filename}

    def work(self, texts: list[str]) -> int:
        """Word pieces after truncation: the transformer's cost grows with them (about 0.3 ms each
        on one CPU thread, from 20 to 256 a text), so they, not characters or items, bound a request."""
        return sum(len(encoding.ids) for encoding in self.tokenizer.encode_batch(texts)) if texts else 0

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
        widths = [padded_width(n) for n in lengths]
        for width in sorted(set(widths)):
            same_width = [i for i, w in enumerate(widths) if w == width]
            for part in length_buckets([width] * len(same_width), self.runtime.settings.batch_size, MAX_TOKENS):
                batch = [same_width[k] for k in part]
                rows = batch if len(batch) > 1 else batch * 2  # one row takes other kernels than two
                ids = np.zeros((len(rows), width), dtype=np.int64)
                mask = np.zeros((len(rows), width), dtype=np.int64)
                for row, index in enumerate(rows):
                    ids[row, : lengths[index]] = encodings[index].ids
                    mask[row, : lengths[index]] = 1
                (vectors,) = self.session.run({"input_ids": ids, "attention_mask": mask})
                out[batch] = vectors[: len(batch)].astype(np.float32)
        return out
