"""Bases of the scorers that run a small trained ONNX head over a shared encoder's vectors.

HeadGraph: a head graph over sentence-encoder vectors, which a SentenceHeadScorer (the -minilm models)
holds, and the stacked reference-free models hold several of. How a context becomes vectors ("last"
turn, the last K turns "joinedK" into one text, or the recent "turns" one vector each) is each model's
manifest config; training uses the same `context_texts`. HREDHeadScorer: heads over the VHRED encoder (ADEM, AutoJudge).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from service.artifacts.manifest import ManifestError, encoder_drift
from service.artifacts.runtime import Session
from service.components.cache import EncodeCache
from service.components.hred import HREDEncoder
from service.components.sentence_encoder import SentenceEncoder
from service.scorers.base import Item, ScoreBatch, Scorer

log = logging.getLogger(__name__)

SENTENCE_ENCODER = "minilm-l6"
HRED_ENCODER = "hred-encoder"
MAX_TURNS = 5  # most recent context turns a "turns" head sees
# Rows of the load-time probe of a head's batching (probe_batching): past the 4-, 8-, 16- and 32-row
# blocks of matrix kernels, with a remainder.
PROBE_ROWS = 37


def context_texts(context: list[str], encoding: str) -> list[str]:
    """The texts to embed for one context, oldest first (training uses this same function).

    "last": the last turn; "joinedK": the last K turns joined by a space into one text;
    "turns": the last MAX_TURNS turns, one vector each.
    """
    if not context:
        return [""]
    if encoding == "last":
        return [context[-1]]
    if encoding.startswith("joined"):
        return [" ".join(context[-int(encoding[len("joined"):]):])]
    if encoding == "turns":
        return list(context[-MAX_TURNS:])
    raise ValueError(f"unknown context encoding {encoding!r}")


def turns_read(encoding: str) -> int:
    """How many of a context's most recent turns `context_texts` reads under `encoding`."""
    if encoding == "last":
        return 1
    if encoding.startswith("joined"):
        return int(encoding[len("joined"):])
    if encoding == "turns":
        return MAX_TURNS
    raise ValueError(f"unknown context encoding {encoding!r}")


def pack_contexts(per_item: list[list[str]], vectors: dict[str, np.ndarray], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(batch, turns, dim) context vectors right-padded with zeros, and the (batch, turns) mask."""
    width = max(len(texts) for texts in per_item)
    context = np.zeros((len(per_item), width, dim), dtype=np.float32)
    mask = np.zeros((len(per_item), width), dtype=np.float32)
    for row, texts in enumerate(per_item):
        for col, text in enumerate(texts):
            context[row, col] = vectors[text]
            mask[row, col] = 1.0
    return context, mask


def probe_batching(session: Session, dim: int, encoding: str, seed: int = 0) -> bool:
    """Whether the head graph gives every row the bits it gets alone when PROBE_ROWS rows of random unit
    vectors, at each context width it may see, run as one batch (Session.rows_exact_in_batch): then rows
    of equal width share a run (Session.batch_exact). On CUDA every row shares one run anyway."""
    if session.on_cuda:
        return False
    rng = np.random.default_rng(seed)

    def unit(*shape: int) -> np.ndarray:
        vectors = rng.standard_normal((*shape, dim)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)

    for width in sorted({1, min(3, turns_read(encoding)), min(MAX_TURNS, turns_read(encoding))}):
        feeds = {"context": unit(PROBE_ROWS, width), "context_mask": np.ones((PROBE_ROWS, width), np.float32),
                 "response": unit(PROBE_ROWS)}
        if "reference" in session.inputs:
            feeds["reference"] = unit(PROBE_ROWS)
        if not session.rows_exact_in_batch(feeds):
            log.info("%s: a row's score moves with its batch-mates on this CPU: its rows run one at a time",
                     session.name)
            return False
    return True


class SentenceEncoderScorer(Scorer):
    """A scorer reading the sentence encoder its manifest `uses` (MiniLM by default)."""

    def _load(self) -> None:
        uses = self.manifest.uses or [SENTENCE_ENCODER]
        self.encoder: SentenceEncoder = self.components[uses[0]]

    def _vectors(self, texts: list[str], cache: EncodeCache) -> dict[str, np.ndarray]:
        return encode_distinct(self.encoder, texts, cache)


def encode_distinct(encoder: SentenceEncoder, texts: list[str], cache: EncodeCache) -> dict[str, np.ndarray]:
    """Each distinct text's vector, from one encoder call for the batch (through the request cache)."""
    distinct = list(dict.fromkeys(texts))
    return dict(zip(distinct, encoder.encode(distinct, cache)))


class HeadGraph:
    """A trained head graph over one encoder's vectors (inputs context, context_mask, response[, reference]),
    each row run with its context packed to its own turns (Session.run_rows_packed)."""

    def __init__(self, session: Session, encoder: SentenceEncoder, encoding: str) -> None:
        self.session, self.encoder, self.encoding = session, encoder, encoding
        session.batch_exact = probe_batching(session, encoder.dim, encoding)

    def sessions(self) -> list[Any]:
        return [self.session]

    def run_reference_free(self, items: list[Item], cache: EncodeCache) -> dict[str, np.ndarray]:
        """`run` for outputs that read no reference (ruber-minilm's s_unref): a graph with a `reference`
        input is given the reply there."""
        if "reference" in self.session.inputs:
            items = [Item(item.context, item.response, item.response) for item in items]
        return self.run(items, cache)

    def run(self, items: list[Item], cache: EncodeCache) -> dict[str, np.ndarray]:
        """Every output of the graph by name, a row per item."""
        per_item = [context_texts(item.context, self.encoding) for item in items]
        texts = [t for texts in per_item for t in texts] + [item.response for item in items]
        uses_reference = "reference" in self.session.inputs
        if uses_reference:
            texts += [item.reference or "" for item in items]
        vectors = encode_distinct(self.encoder, texts, cache)

        def pack(rows: Sequence[int]) -> dict[str, np.ndarray]:
            # A row run alone has its context packed to its own turns: padded turns change the float32
            # rounding of a score (Session.run_rows_packed).
            context, mask = pack_contexts([per_item[i] for i in rows], vectors, self.encoder.dim)
            feeds = {"context": context, "context_mask": mask,
                     "response": np.stack([vectors[items[i].response] for i in rows])}
            if uses_reference:
                feeds["reference"] = np.stack([vectors[items[i].reference or ""] for i in rows])
            return feeds

        widths = [len(texts) for texts in per_item]
        return dict(zip(self.session.outputs, self.session.run_rows_packed(len(items), pack, widths)))


class SentenceHeadScorer(SentenceEncoderScorer):
    """A model whose score is a HeadGraph's output over its sentence encoder's vectors."""

    head_file = "head.onnx"

    def _load(self) -> None:
        super()._load()
        self.head = HeadGraph(self.runtime.session(self.manifest.path(self.head_file)), self.encoder,
                              str(self.manifest.config.get("context_encoding", "last")))

    @property
    def session(self) -> Session:
        return self.head.session

    @property
    def context_turns(self) -> int | None:
        return turns_read(self.head.encoding)

    def _run(self, items: list[Item], cache: EncodeCache) -> dict[str, np.ndarray]:
        return self.head.run(items, cache)

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        return ScoreBatch([float(s) for s in self._run(items, cache)["score"]])


class HREDHeadScorer(Scorer):
    """A small ONNX head over hred-encoder vectors, run one row at a time (Session.run_rows)."""

    head_file = ""  # the head's default file name (the manifest's config.head wins)
    bounded_by_squashing = True  # (c^T M r [+ r^T N r_hat] - alpha) / beta has no bound of its own

    def _load(self) -> None:
        uses = self.manifest.uses or [HRED_ENCODER]
        self.encoder: HREDEncoder = self.components[uses[0]]
        self._check_encoder(uses[0])
        self.head = self.runtime.session(self.manifest.path(self.manifest.config.get("head", self.head_file)))

    @property
    def context_turns(self) -> int | None:
        return self.encoder.max_context_turns

    def _check_encoder(self, name: str) -> None:
        """Refuse to serve the head on another encoder than the one it was trained on (config.encoder_files,
        written at export): one of the same width would load and score, silently wrong."""
        if not self.manifest.config.get("encoder_files"):
            # nothing recorded: served, since nothing says it is wrong, but the operator should know
            log.warning("%s: its manifest records no config.encoder_files, so whether it was trained on this "
                        "store's %s cannot be checked; re-export it to record them", self.name, name)
            return
        drift = encoder_drift(self.manifest, self.encoder.manifest)
        if drift:
            recorded = self.manifest.config["encoder_files"]
            found = ", ".join(f"{n} {recorded[n][:12]} -> {h[:12] if h else 'missing'}" for n, h in drift.items())
            raise ManifestError(
                f"{self.name}: trained on other {name} files than the store has ({found}): re-export it with "
                f"its encoder (python -m training export --vhred RUN --{self.manifest.scorer} RUN)",
                f"trained on another {name}")

    def _run_head(self, feeds: dict[str, np.ndarray]) -> dict[str, list[float]]:
        """Every output of the head by name (`score` always; ADEM's terms where its graph has them)."""
        outputs = self.head.run_rows(feeds)
        return {name: [float(v) for v in np.asarray(values).reshape(-1)]
                for name, values in zip(self.head.outputs, outputs)}

