"""The inputs of the two analyses, as importers produce them and the CLI passes them on."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CorrelateInput:
    """Arguments of `service.stats.correlate`: human ratings (one or several per item), metric scores."""

    human: list[Any]
    scores: dict[str, list[float]]
    systems: list[str] | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # methods, ..., system_resampling of a /correlate body
    inputs: list[str] | None = None  # the input each item answers, where systems share inputs
    notes: str = ""  # what the importer left out of the file or read with a caveat, and why ("" where nothing)
    # What the file says scored each metric ({"version", "options"?}; `dialscore score`'s output), and how
    # many of the items read are each model's training items.
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    trained: dict[str, int] = field(default_factory=dict)
    format: str = ""  # the format it was read as (load_correlate)
    places: list[str] | None = None  # each item's "file:line", where the file has an item a line


@dataclass
class HumanEvalInput:
    """Arguments of `service.stats.human_eval.assess`, plus what an importer knows about the file's origin.

    `upstream` carries per-rater results published with the data (e.g. Ji et al.'s pass/fail split
    and z-scores) so that a reproduction can be compared with them; it never feeds the analysis.
    """

    ratings: list[dict[str, Any]]
    reverse: list[str] = field(default_factory=list)
    scale: tuple[float, float] = (0.0, 100.0)
    qc_system: str | None = None
    qc_criteria: list[str] | None = None
    alpha: float | None = None  # a /human-eval body's own alpha
    upstream: dict[str, Any] | None = None
    skipped: list[str] = field(default_factory=list)  # what the importer could not use, and why
    places: list[str] | None = None  # each rating's "file:line", where the file has a rating a line
