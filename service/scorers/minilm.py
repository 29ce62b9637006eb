"""Models on the shared MiniLM sentence encoder: the untrained `minilm-cosine` baseline and the
trained heads `adem-minilm`, `ruber-minilm` and `autojudge-minilm`, small ONNX graphs over its
384-d vectors. How a context becomes vectors ("last" turn, the last K turns "joinedK" into one text,
or the recent "turns" one vector each) is each model's manifest config, chosen on development data.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from service.components.cache import EncodeCache
from service.components.sentence_encoder import SentenceEncoder
from service.scorers.base import REFERENCE_FREE, REFERENCE_FREE_OPTION, Item, ScoreBatch, Scorer, term_details
from service.scorers.registry import register
from service.scorers.ruber import blend, normalise

ENCODER = "minilm-l6"
MAX_TURNS = 5  # most recent context turns a "turns" head sees


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


class _MiniLMScorer(Scorer):
    def _load(self) -> None:
        uses = self.manifest.uses or [ENCODER]
        self.encoder: SentenceEncoder = self.components[uses[0]]

    def _vectors(self, texts: list[str], cache: EncodeCache) -> dict[str, np.ndarray]:
        """One encoder call for every distinct text of the batch (through the request cache)."""
        distinct = list(dict.fromkeys(texts))
        encoded = self.encoder.encode(distinct, cache)
        return dict(zip(distinct, encoded))


@register("minilm-cosine")
class MiniLMCosine(_MiniLMScorer):
    """Zero-training baseline: mean of cos(reply, reference) and cos(last context turn, reply); its
    reference-free part is the second cosine alone."""

    computes = "referenced"
    default_options: ClassVar[dict[str, dict[str, Any]]] = {REFERENCE_FREE: REFERENCE_FREE_OPTION}

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        texts = [t for item in items for t in (item.response, item.reference or "", context_texts(item.context, "last")[0])]
        vectors = self._vectors(texts, cache)
        scores, details = [], []
        for item in items:
            reply = vectors[item.response]
            s_ref = float(reply @ vectors[item.reference or ""])
            s_ctx = float(reply @ vectors[context_texts(item.context, "last")[0]])
            scores.append((s_ref + s_ctx) / 2.0)
            details.append({"s_ref": s_ref, "s_context": s_ctx})
        return ScoreBatch(scores, details)

    def _score_reference_free(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        lasts = [context_texts(item.context, "last")[0] for item in items]
        vectors = self._vectors([t for item, last in zip(items, lasts) for t in (item.response, last)], cache)
        scores = [float(vectors[item.response] @ vectors[last]) for item, last in zip(items, lasts)]
        return ScoreBatch(scores, [{"s_context": s} for s in scores])


class _HeadScorer(_MiniLMScorer):
    """A trained ONNX head over encoder vectors: inputs context, context_mask, response[, reference]."""

    head_file = "head.onnx"

    def _load(self) -> None:
        super()._load()
        self.encoding = str(self.manifest.config.get("context_encoding", "last"))
        self.session = self.runtime.session(self.manifest.path(self.head_file))

    def _run(self, items: list[Item], cache: EncodeCache) -> dict[str, np.ndarray]:
        per_item = [context_texts(item.context, self.encoding) for item in items]
        texts = [t for texts in per_item for t in texts] + [item.response for item in items]
        uses_reference = "reference" in self.session.inputs
        if uses_reference:
            texts += [item.reference or "" for item in items]
        vectors = self._vectors(texts, cache)

        def pack(rows: range) -> dict[str, np.ndarray]:
            # A row run alone has its context packed to its own turns: padded turns changed the float32
            # rounding of a score (Session.run_rows_packed).
            context, mask = pack_contexts([per_item[i] for i in rows], vectors, self.encoder.dim)
            feeds = {"context": context, "context_mask": mask,
                     "response": np.stack([vectors[items[i].response] for i in rows])}
            if uses_reference:
                feeds["reference"] = np.stack([vectors[items[i].reference or ""] for i in rows])
            return feeds

        return dict(zip(self.session.outputs, self.session.run_rows_packed(len(items), pack)))

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        return ScoreBatch([float(s) for s in self._run(items, cache)["score"]])


@register("adem-minilm")
class AdemMiniLM(_HeadScorer):
    """ADEM's terms c^T M r_hat + r^T N r_hat on MiniLM vectors (Lowe et al. 2017), scored as
    alpha + beta (terms - copy penalty) with alpha and beta trained (the card says where it leaves the paper)."""

    computes = "referenced"
    bounded_by_squashing = True
    terms = ("s_unref", "s_ref", "copy_penalty")  # graph outputs given in `details` (model card: details)

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        out = self._run(items, cache)
        return ScoreBatch([float(s) for s in out["score"]], term_details(out, self.terms))


@register("autojudge-minilm")
class AutoJudgeMiniLM(_HeadScorer):
    """AutoJudge's reference-free c^T M r on MiniLM vectors (Deriu & Cieliebak 2019), scored as
    alpha + beta (c^T M r - copy penalty) with alpha and beta trained (its card says why)."""

    computes = "unreferenced"
    bounded_by_squashing = True


@register("ruber-minilm")
class RuberMiniLM(_HeadScorer):
    """RUBER (Tao et al. 2018): referenced cosine and an unreferenced head, min-max normalised, blended."""

    computes = "referenced"
    default_options: ClassVar[dict[str, dict[str, Any]]] = {
        "blend": {"type": "string", "choices": ["min", "max", "geometric", "arithmetic"], "default": "arithmetic"},
        "components": {"type": "boolean", "default": False},
        REFERENCE_FREE: REFERENCE_FREE_OPTION,
    }

    def _score_reference_free(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        """s_U as the head returns it, in (0, 1) (the graph's `s_unref`, which does not read its reference
        input: given the reply there); unnormalised for the reason Ruber._score_reference_free gives."""
        out = self._run([Item(item.context, item.response, item.response) for item in items], cache)
        return ScoreBatch([float(s) for s in out["s_unref"]])

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        out = self._run(items, cache)
        ranges = self.manifest.config["normalise"]
        s_ref = normalise_min_max(out["s_ref"], *ranges["s_ref"])
        s_unref = normalise_min_max(out["s_unref"], *ranges["s_unref"])
        scores = blend(s_ref, s_unref, options["blend"])
        details = None
        if options["components"]:
            details = [{"s_ref": float(a), "s_unref": float(b)} for a, b in zip(s_ref, s_unref)]
        return ScoreBatch([float(s) for s in scores], details)


def normalise_min_max(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """RUBER's min-max normalisation, the same function the GloVe RUBER uses."""
    return normalise(values, [lo, hi])
