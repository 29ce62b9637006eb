"""A stacked reference-free model: score = bias + sum_j weight_j (x_j - mean_j) / sd_j over signals
read on the shared encoder pass(es) (manifest config.signals; training/unref fits the weights).

Signals (signals.py): trained heads' outputs (`source: head`: a graph of this folder over one
encoder's vectors, optionally as a logit), cosines of the reply with the context turns, a copy
penalty, and two word counts. Vectors come through the request's EncodeCache, so a model on
minilm-l6 beside the -minilm models encodes nothing more than they do.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from service.components.cache import EncodeCache
from service.components.sentence_encoder import SentenceEncoder
from service.scorers.base import Item, ScoreBatch, Scorer
from service.scorers.heads import MAX_TURNS, HeadGraph, context_texts, encode_distinct, turns_read
from service.scorers.unref.signals import (CONTEXT_TEXT_SIGNALS, TEXT_SIGNALS, TRANSFORMS, VECTOR_SIGNALS, logit,
                                          text_signal, turns_of, vector_signal)
from service.artifacts.manifest import ManifestError

SPEC_KEYS = ("name", "source", "mean", "sd", "weight")


class StackedUnreferenced(Scorer):
    computes = "unreferenced"
    bounded_by_squashing = True  # a weighted sum has no bound of its own
    default_options: ClassVar[dict[str, dict[str, Any]]] = {"signals": {"type": "boolean", "default": False}}

    def _load(self) -> None:
        config = self.manifest.config
        self.specs: list[dict[str, Any]] = [dict(spec) for spec in config["signals"]]
        self.bias = float(config["bias"])
        self.heads: dict[str, HeadGraph] = {}
        for spec in self.specs:
            missing = [key for key in SPEC_KEYS if key not in spec]
            if missing:
                raise ManifestError(f"{self.name}: config.signals entry {spec.get('name')!r} lacks {missing}",
                                    "manifest invalid: config.signals")
            if spec["source"] == "head":
                if spec.get("transform", "identity") not in TRANSFORMS:
                    raise ManifestError(f"{self.name}: unknown transform {spec['transform']!r}",
                                        "manifest invalid: config.signals")
                if spec["head"] not in self.heads:
                    self.heads[spec["head"]] = HeadGraph(self.runtime.session(self.manifest.path(spec["head"])),
                                                          self._encoder(spec), spec.get("context_encoding", "last"))
            elif spec["source"] in VECTOR_SIGNALS:
                self._encoder(spec)
            elif spec["source"] in CONTEXT_TEXT_SIGNALS and "turns" not in spec:
                raise ManifestError(f"{self.name}: config.signals entry {spec['name']!r} lacks ['turns']",
                                    "manifest invalid: config.signals")
            elif spec["source"] not in TEXT_SIGNALS and spec["source"] not in CONTEXT_TEXT_SIGNALS:
                raise ManifestError(f"{self.name}: unknown signal source {spec['source']!r}",
                                    "manifest invalid: config.signals")
        self.mean = np.array([float(spec["mean"]) for spec in self.specs])
        self.sd = np.array([float(spec["sd"]) for spec in self.specs])
        self.weight = np.array([float(spec["weight"]) for spec in self.specs])
        if not np.all(self.sd > 0):
            raise ManifestError(f"{self.name}: every signal's sd must be above 0", "manifest invalid: config.signals")

    @property
    def context_turns(self) -> int | None:
        """The vector signals' turns (signals.turns_of) or a head's, whichever reaches further back."""
        return max([MAX_TURNS, *(turns_read(runner.encoding) for runner in self.heads.values())])

    def _encoder(self, spec: dict[str, Any]) -> SentenceEncoder:
        if spec.get("encoder") not in self.components:
            raise ManifestError(f"{self.name}: signal {spec['name']!r} reads encoder {spec.get('encoder')!r}, "
                                "which is not in `uses`", "manifest invalid: config.signals")
        return self.components[spec["encoder"]]

    def _encode_once(self, items: list[Item], turns: list[list[str]], cache: EncodeCache) -> None:
        """Every text that the heads and the vector signals read, one encoder call per encoder, into the
        request's cache, which they then read: a context turn only the vector signals read (the heads read
        the last) would otherwise be encoded alone, a run of its own."""
        wanted: dict[str, tuple[SentenceEncoder, list[str]]] = {}
        for runner in self.heads.values():
            wanted.setdefault(runner.encoder.name, (runner.encoder, []))[1].extend(
                t for item in items for t in context_texts(item.context, runner.encoding))
        for spec in self.specs:
            if spec["source"] in VECTOR_SIGNALS:
                encoder = self.components[spec["encoder"]]
                wanted.setdefault(encoder.name, (encoder, []))[1].extend(t for ts in turns for t in ts)
        for encoder, texts in wanted.values():
            encoder.encode(list(dict.fromkeys([*texts, *(item.response for item in items)])), cache)

    def signal_values(self, items: list[Item], cache: EncodeCache) -> np.ndarray:
        """(items, signals) raw signal values, in config.signals' order."""
        columns = np.zeros((len(items), len(self.specs)))
        turns = [turns_of(item.context) for item in items]
        self._encode_once(items, turns, cache)
        outputs = {head: runner.run_reference_free(items, cache) for head, runner in self.heads.items()}
        vectors: dict[str, dict[str, np.ndarray]] = {}
        for spec in self.specs:
            if spec["source"] in VECTOR_SIGNALS and spec["encoder"] not in vectors:
                vectors[spec["encoder"]] = encode_distinct(self.components[spec["encoder"]],
                                                           [t for ts in turns for t in ts] + [i.response for i in items],
                                                           cache)
        for j, spec in enumerate(self.specs):
            if spec["source"] == "head":
                values = np.asarray(outputs[spec["head"]][spec.get("output", "score")], dtype=np.float64)
                columns[:, j] = logit(values) if spec.get("transform") == "logit" else values
            elif spec["source"] in VECTOR_SIGNALS:
                table = vectors[spec["encoder"]]
                columns[:, j] = [vector_signal(spec, table[item.response], np.stack([table[t] for t in ts]))
                                 for item, ts in zip(items, turns)]
            else:
                columns[:, j] = [text_signal(spec, item.response, ts) for item, ts in zip(items, turns)]
        return columns

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        if not items:
            return ScoreBatch([])
        values = self.signal_values(items, cache)
        standard = (values - self.mean) / self.sd
        # Column by column, not `@`: BLAS sums a matrix-vector product in an order set by its row count,
        # which moved a score in its last bit with the batch; elementwise steps do not.
        scores = np.full(len(items), self.bias)
        for j, weight in enumerate(self.weight):
            scores += standard[:, j] * weight
        details = None
        if options["signals"]:
            details = [{spec["name"]: float(v) for spec, v in zip(self.specs, row)} for row in values]
        return ScoreBatch([float(s) for s in scores], details)
