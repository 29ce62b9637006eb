"""The scorer interface: public score() on the base class, per-metric steps in subclasses.

A scorer is built once per worker from its manifest and the components it uses; it must give
the same score for an item whatever else is in the batch (bucketing, never cross-item state).
"""
from __future__ import annotations

import copy
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from service.components.cache import EncodeCache
from service.artifacts.manifest import Manifest, ManifestError
from service.artifacts.runtime import providers_of
from service.scorers.percentile import HumanPercentile
from service.text import canonical, is_blank


@dataclass(frozen=True)
class Item:
    """One reply to score: context oldest first, the reply, an optional reference; every text in
    NFC (text.canonical), here where every scored item is made, so no model sees another spelling."""

    context: list[str]
    response: str
    reference: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "context", [_canonical(t) for t in self.context])
        object.__setattr__(self, "response", _canonical(self.response))
        object.__setattr__(self, "reference", _canonical(self.reference))


def _canonical(text: Any) -> Any:
    """A text in NFC; anything else (a None reference, a value the schema has yet to refuse) as it is."""
    return canonical(text) if isinstance(text, str) else text


def lacks_reference(reference: str | None) -> bool:
    """Whether a referenced model has nothing to compare the reply with: no reference, or one that is blank
    (whitespace or invisible characters: text.is_blank). A blank reference would score every reply against
    the embedding of nothing, so the API and bulk both refuse it."""
    return reference is None or is_blank(reference)


@dataclass(frozen=True)
class Turn:
    speaker: str  # "user" | "bot"
    text: str  # in NFC, as an Item's texts

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", _canonical(self.text))


@dataclass(frozen=True)
class Dialogue:
    """A whole conversation, for `dialogue` models."""

    turns: list[Turn]


@dataclass
class ScoreBatch:
    scores: list[float]
    details: list[dict[str, Any]] | None = None
    human_percentile: list[float] | None = None  # where the model ships its table (service/scorers/percentile.py)


def term_details(outputs: dict[str, Any], names: tuple[str, ...]) -> list[dict[str, float]] | None:
    """Per item {name: value} of a head's score terms (graph outputs beside `score`), or None where the
    graph does not return them all: a head exported before it had them is served without details."""
    if not all(name in outputs for name in names):
        return None
    return [{name: float(outputs[name][i]) for name in names} for i in range(len(outputs["score"]))]


# The option that asks a referenced model for the part of its formula that reads no reference (RUBER's
# unreferenced metric s_U, minilm-cosine's context cosine): an option like any other, which makes the
# call read no reference (Call.reads_reference), so the API, its limits and bulk do not ask for one.
REFERENCE_FREE = "reference_free"
REFERENCE_FREE_OPTION = {"type": "boolean", "default": False,
                         "description": "Score the reference-free part of the formula alone; the reference is "
                                        "then neither required nor read."}


class Scorer:
    """Base of every metric. Subclasses implement `_score`; options are validated here."""

    # Option schema: {"name": {"type": "string"|"boolean"|"number", "choices": [...], "default": ...}}.
    # The manifest's `options` extend or override these.
    default_options: ClassVar[dict[str, dict[str, Any]]] = {}
    # Linear regression heads (ADEM, AutoJudge) are unbounded; True keeps their output inside the
    # manifest's score_range with soft_bound, which leaves every ranking as it was.
    bounded_by_squashing: ClassVar[bool] = False
    # The kind this implementation computes. A manifest may not relabel it: adem declared
    # "unreferenced" would skip the reference check and still read a reference when one came,
    # against "unreferenced models ignore the reference".
    computes: ClassVar[str] = ""

    def __init__(self, manifest: Manifest, components: dict[str, Any], runtime: Any) -> None:
        if self.computes and manifest.kind != self.computes:
            raise ManifestError(f"{manifest.name}: kind {manifest.kind!r}, but scorer {manifest.scorer!r} computes a "
                                f"{self.computes} score", "manifest invalid: kind")
        self.manifest = manifest
        self.components = components
        self.runtime = runtime
        self.option_spec = {**self.default_options, **manifest.options}
        self._load()
        self.human_percentile = HumanPercentile.of(manifest)

    # --- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def kind(self) -> str:
        return self.manifest.kind

    @property
    def reads_reference(self) -> bool:
        """Whether an item must carry a `reference` under the default options. read_manifest refuses a
        `requires` that contradicts the kind, so the kind is the whole answer."""
        return self.kind == "referenced"

    def providers(self) -> list[str]:
        """Execution providers the model's sessions really got (CPU only for pure-Python metrics)."""
        return providers_of(self._sessions())

    def bit_exact_across_batches(self) -> bool:
        """Whether a score is the same bits whatever items share its request: every session on the CPU EP
        (runtime.Session.bit_exact_across_batches); pure-Python metrics always."""
        return all(getattr(s, "bit_exact_across_batches", True) for s in self._sessions())

    def _sessions(self) -> list[Any]:
        """ONNX sessions this scorer owns or shares (for provider reporting), those of parts it holds in a
        dict too (a stack's head runners)."""
        found = []
        held = list(vars(self).values()) + list(self.components.values())
        for value in [part for value in held for part in (value.values() if isinstance(value, dict) else [value])]:
            sessions = getattr(value, "sessions", None)
            if callable(sessions):
                found.extend(sessions())
            elif hasattr(value, "get_providers"):
                found.append(value)
        return found

    @property
    def context_turns(self) -> int | None:
        """The most recent context turns its score reads, at most (None: every turn). `on_long_context:
        "keep_last"` keeps that many, so the score of a trimmed context is the score of the whole."""
        return None

    # --- the reference-free part ----------------------------------------------------------------
    @property
    def has_reference_free_part(self) -> bool:
        """Whether `options.reference_free` is offered: a referenced model whose options list it (those
        that implement `_score_reference_free`)."""
        return self.kind == "referenced" and REFERENCE_FREE in self.option_spec

    def _score_reference_free(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        raise NotImplementedError

    # --- scoring ---------------------------------------------------------------------------
    def resolve_options(self, options: dict[str, Any] | None) -> dict[str, Any]:
        """Defaults filled and values checked; OptionError naming each bad option."""
        resolved, errors = self.check_options(options)
        if errors:
            raise OptionError(errors)
        return resolved

    def check_options(self, options: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, str]]:
        """(every known option whose value is valid, defaults filled; the errors by `options.<name>`).
        Unknown names are the only errors reported when there are any. Checked here, not by a marshmallow
        schema: the spec is the manifest's data, published as is by GET /models, and its types are JSON's
        exactly (marshmallow's Boolean takes 1 and "true", its Float "1.5")."""
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.option_spec))
        resolved: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for key, spec in self.option_spec.items():
            value = options.get(key, spec.get("default"))
            expected = spec.get("type")
            if expected == "string" and not isinstance(value, str):
                errors[f"options.{key}"] = "Must be a string."
            elif expected == "boolean" and not isinstance(value, bool):
                errors[f"options.{key}"] = "Must be a boolean."
            elif expected == "number" and (isinstance(value, bool) or not isinstance(value, (int, float))):
                errors[f"options.{key}"] = "Must be a number."
            elif "choices" in spec and value not in spec["choices"]:
                errors[f"options.{key}"] = f"Must be one of: {', '.join(map(str, spec['choices']))}."
            else:
                resolved[key] = value
        if unknown:
            errors = {f"options.{k}": "Unknown option for this model." for k in unknown}
        return resolved, errors

    def score(self, items: list[Any], options: dict[str, Any] | None = None,
              cache: EncodeCache | None = None) -> ScoreBatch:
        """Scores (and details, where the model gives them) for `items`; OptionError for bad `options`."""
        return self.score_resolved(items, self.resolve_options(options), cache)

    def score_resolved(self, items: list[Any], resolved: dict[str, Any],
                       cache: EncodeCache | None = None) -> ScoreBatch:
        """`score` with options that resolve_options returned (the data plane and bulk resolve them once).
        The reference-free part's scores are clipped, never squashed: they are cosines and sigmoids."""
        part = resolved.get(REFERENCE_FREE) is True and self.has_reference_free_part
        # Identical items are scored once and share the result: a graph's matrix kernels may round a
        # row by its position in the batch (adem's head differed by one float32 ulp in rows 4k and 4k+1),
        # and /rerank's "ties keep the candidates' order" needs identical candidates to be ties.
        distinct, where = _distinct(items)
        score = self._score_reference_free if part else self._score
        batch = score(distinct, resolved, cache if cache is not None else EncodeCache())
        scores = np.asarray(batch.scores, dtype=np.float64)
        if scores.shape != (len(distinct),) or not np.all(np.isfinite(scores)):
            raise RuntimeError(f"{self.name} produced non-finite or misshapen scores")
        if self.bounded_by_squashing and not part:
            scores = soft_bound(scores, *self.manifest.score_range)
        else:
            # A cosine or an overlap ratio can pass its bound by a rounding error (BLEU-4 of a reply
            # equal to its reference was 1.0000000000000004): /models promises score_range, so clip.
            scores = np.clip(scores, *self.manifest.score_range)
        batch.scores = [float(scores[j]) for j in where]
        if self.human_percentile is not None and not part:  # the table holds the whole model's scores
            batch.human_percentile = self.human_percentile(batch.scores)
        if batch.details is not None and len(distinct) < len(items):
            batch.details = [copy.deepcopy(batch.details[j]) for j in where]
        return batch

    def warm_up(self) -> None:
        """Run one tiny batch so the first request does not pay for graph initialisation."""
        if self.kind == "dialogue":
            sample: Any = Dialogue([Turn("user", "hello there, how are you?"), Turn("bot", "fine thanks, and you?")])
        else:
            sample = Item(["hello there, how are you?"], "fine thanks, and you?", "i am good, thank you.")
        self.score([sample])

    def item_problem(self, item: Any, options: dict[str, Any]) -> tuple[str, str] | None:
        """(field, message) where this model cannot score an item the schema takes, under `options`
        (resolved); None where it can. The data plane answers it as an invalid item, bulk as a bad line."""
        return None

    # --- for subclasses ----------------------------------------------------------------------
    def _load(self) -> None:
        """Open sessions and arrays from self.manifest; called once per worker."""

    def _score(self, items: list[Any], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        raise NotImplementedError


@dataclass(frozen=True)
class Call:
    """A model with its resolved options: what the data plane, bulk and evaluation run. Whether an item
    must carry a reference, and so the kind of score, follow from both (`options.reference_free`)."""

    scorer: Scorer
    options: dict[str, Any]

    def __getattr__(self, attribute: str) -> Any:
        """Everything but the kind, the reference question and scoring is the model's own (name, version)."""
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(self.scorer, attribute)

    @property
    def reads_reference(self) -> bool:
        return self.scorer.reads_reference and not (self.options.get(REFERENCE_FREE) is True
                                                    and self.scorer.has_reference_free_part)

    @property
    def kind(self) -> str:
        """The scorer's kind, `unreferenced` where the options ask a referenced model for its part."""
        return "unreferenced" if self.scorer.kind == "referenced" and not self.reads_reference else self.scorer.kind

    def item_problem(self, item: Any) -> tuple[str, str] | None:
        return self.scorer.item_problem(item, self.options)

    def score(self, items: list[Any], options: dict[str, Any] | None = None,
              cache: EncodeCache | None = None) -> ScoreBatch:
        """Scores under the call's options (`options`, where given, override them and are checked)."""
        resolved = self.options if options is None else self.scorer.resolve_options({**self.options, **options})
        return self.scorer.score_resolved(items, resolved, cache)


def _item_key(item: Any) -> Hashable:
    if isinstance(item, Item):
        return ("item", tuple(item.context), item.response, item.reference)
    if isinstance(item, Dialogue):
        return ("dialogue", tuple((t.speaker, t.text) for t in item.turns))
    return ("object", id(item))  # anything else is its own


def _distinct(items: list[Any]) -> tuple[list[Any], list[int]]:
    """The distinct items in first-seen order, and for each item the index of its distinct copy."""
    first: dict[Hashable, int] = {}
    distinct: list[Any] = []
    where: list[int] = []
    for item in items:
        key = _item_key(item)
        if key not in first:
            first[key] = len(distinct)
            distinct.append(item)
        where.append(first[key])
    return distinct, where


def soft_bound(scores: np.ndarray, low: float, high: float, band: float = 0.05) -> np.ndarray:
    """Scores kept strictly inside (low, high), unchanged except in the outer `band` of the range.

    A regression head fitted to 1-5 ratings can return 5.4 for a reply unlike its training data,
    while /models promises score_range [1, 5]. Clipping would tie every such reply at 5 and
    /rerank would lose the order among exactly the best candidates, so the tails are compressed
    instead: within `band` * (high - low) of either end, x -> end -/+ w * exp(-|x - edge| / w),
    which is continuous, has slope 1 at the edge, and is strictly increasing (in float64, until
    the gap to the end falls below double precision, ~30 widths out).
    """
    width = band * (high - low)
    top, bottom = high - width, low + width
    out = np.array(scores, dtype=np.float64)
    over, under = out > top, out < bottom
    out[over] = high - width * np.exp(-(out[over] - top) / width)
    out[under] = low + width * np.exp((out[under] - bottom) / width)
    return out


class OptionError(ValueError):
    """Bad `options` for a model: maps field paths to messages (becomes a 422)."""

    def __init__(self, fields: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in fields.items()))
        self.fields = fields
