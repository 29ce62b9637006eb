"""The head signals for stacking: each head's scores on the train partitions out of fold (a head fitted
to ratings scores its own train items far better than new ones, and a stacker fitted on its in-fold
scores would give it every weight), and the whole fit's scores everywhere else (negative samples, serving).

One fold per leave-one-set-out GROUP (sets that hold the same items are one group): the head trained
with that group's judged rows left out scores them. RUBER's s_U reads no rating, so it needs no folds.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import torch

from service.artifacts.manifest import read_manifest
from training.core.turn_training import predict
from training.encoders.minilm.embed import EmbeddingCache
from training.data.negatives import NEGATIVE_SAMPLING
from training.core.turn_training import Config
from training.train_minilm import train
from training.unref.recipes import HeadSource

GROUPS = {"dstc7": "dstc7", "dailydialog_gupta_multiref": "gupta", "xdial_dailydialog_gupta": "gupta",
          "predictive_engagement": "pe", "holistic_eval": "holistic", "xdial_dailydialog_zhao": "zhao",
          "xdial_persona_zhao": "persona", "xdial_conture_turn": "conture", "conture": "conture"}


class OnnxHead:
    """A served head graph called as the torch heads are (training.core.turn_training.predict)."""

    def __init__(self, path: Path) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.referenced = "reference" in self.inputs  # ruber-minilm's graph: s_unref does not read it

    def __call__(self, *tensors: torch.Tensor) -> dict[str, torch.Tensor]:
        feeds = {name: tensor.numpy() for name, tensor in zip(self.inputs, tensors)}
        names = [o.name for o in self.session.get_outputs()]
        return {name: torch.from_numpy(value) for name, value in zip(names, self.session.run(None, feeds))}


def recipe_config(source: HeadSource, store: Path, served_next_turn: bool = False) -> Config:
    """The training configuration of a head: a served model's own (its card's config), or that model's
    defaults; either with next-turn pre-training of M on RUBER's ~10k negative-sampling pairs, unless
    `served_next_turn` keeps a served model's own 168k DailyDialog and Chit-Chat next turns (hours of a
    slow encoder on a CPU; what the pairs cost in dev Pearson: the reference-free models' page in docs/notes/)."""
    if not source.served:
        return Config(model=source.model, next_turn_sources=(NEGATIVE_SAMPLING,))
    saved = read_manifest(Path(store) / source.model).card["config"]
    known = {f.name for f in dataclasses.fields(Config)}
    values = {k: v for k, v in saved.items() if k in known and k not in ("blend", "blend_dev")}
    sources = tuple(values.get("next_turn_sources", Config.next_turn_sources)) if served_next_turn else (NEGATIVE_SAMPLING,)
    return Config(**{**values, "next_turn_sources": sources})


def outputs(head: Any, cache: EmbeddingCache, contexts: list[list[str]], replies: list[str], output: str) -> np.ndarray:
    """One output of a head (torch or OnnxHead) for these rows, context encoding `last`; a referenced
    graph is given the reply as its reference, which its reference-free output does not read."""
    with torch.no_grad():
        out = predict(head, cache, "last", contexts, replies, replies if head.referenced else None)
    return np.asarray(out[output], dtype=np.float64)


def out_of_fold(config: Config, cache: EmbeddingCache, rows: dict[str, tuple[list, list]], output: str = "score",
                log: Callable[[str], None] = print) -> dict[str, np.ndarray]:
    """Per training set, each row scored by the head trained without its group's judged rows."""
    scored: dict[str, np.ndarray] = {}
    for group in sorted(set(GROUPS[name] for name in rows)):
        left_out = tuple(name for name in GROUPS if GROUPS[name] == group)
        head = train(dataclasses.replace(config, left_out=left_out), cache, log=log)
        for name in left_out:
            if name in rows:
                scored[name] = outputs(head, cache, *rows[name], output)
        log(f"out-of-fold head without {', '.join(left_out)}: done")
    return scored
