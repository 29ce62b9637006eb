"""What the client sends and returns: TypedDicts for the contract's JSON, dataclasses for the scoring answers.

Field names are the service's HTTP contract's, as its GET /openapi.json describes them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

OnInvalid = Literal["reject", "skip"]
OnLongContext = Literal["reject", "keep_last"]
Method = Literal["pearson", "spearman", "kendall"]


# --- requests ----------------------------------------------------------------------------------
class _ItemRequired(TypedDict):
    context: list[str]
    response: str


class Item(_ItemRequired, total=False):
    """A reply to score: its context (oldest first), the reply, and a human reference for `referenced` models."""

    reference: str | None


class Turn(TypedDict):
    """One turn of a conversation."""

    speaker: Literal["user", "bot"]
    text: str


class Dialogue(TypedDict):
    """A whole conversation, the item of `dialogue` models (mh)."""

    turns: list[Turn]


class Rating(TypedDict):
    """One rater's scores of one item of one system, for /human-eval."""

    rater: str
    system: str
    item: str
    scores: dict[str, float]


# --- /score and /rerank --------------------------------------------------------------------------
class ReplyWarning(TypedDict):
    """A reply the models were not made to read (its score is still given): `index` into the items or
    candidates, `code` (`not_english`, `no_words`, `empty`) and a message."""

    index: int
    code: str
    message: str


@dataclass
class ScoreResult:
    """One model's answer: `scores[i]` is `items[i]`'s score (None where the item was skipped)."""

    model: str
    version: str
    scores: list[float | None]
    details: list[dict[str, Any] | None] | None = None  # components per item, where the model gives them
    skipped: list[int] = field(default_factory=list)  # under on_invalid="skip": the items left out
    errors: dict[str, str] = field(default_factory=dict)  # why, by field path (`items.3.reference`)
    context_dropped: list[int] | None = None  # under on_long_context="keep_last": turns dropped, per item
    warnings: list[ReplyWarning] = field(default_factory=list)
    # Per item, the share in [0, 1] of human next turns its score beats (None where skipped); None for a
    # model that ships no percentile table (GET /models, docs/calibration.md).
    human_percentile: list[float | None] | None = None
    # The items that are this model's training items (matched by last turn and reply): no held-out figures.
    trained: list[int] = field(default_factory=list)


@dataclass
class MultiScoreResult:
    """Several models on the same items: `results[name]` is each model's answer."""

    model: str  # the names, comma-separated
    version: str  # name=version of each, comma-separated
    models: list[str]
    results: dict[str, ScoreResult]
    skipped: list[int] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    context_dropped: list[int] | None = None
    warnings: list[ReplyWarning] = field(default_factory=list)


@dataclass(frozen=True)
class RankedCandidate:
    """A candidate in a ranking: its index in `candidates`, its text, its score, the share in [0, 1] of
    human next turns that score beats (None for a model that ships no percentile table), and the components
    its options ask for (`details`, as `ScoreResult.details` gives them; None where none are given)."""

    index: int
    response: str
    score: float
    human_percentile: float | None = None
    details: dict[str, Any] | None = None


@dataclass
class Ranking:
    """/rerank's answer: `ranking` best first, ties in the candidates' order."""

    model: str
    version: str
    ranking: list[RankedCandidate]
    skipped: list[int] = field(default_factory=list)  # under on_invalid="skip": candidates left out
    errors: dict[str, str] = field(default_factory=dict)  # why, by `candidates.<i>`
    context_dropped: int | None = None  # under on_long_context="keep_last": the context turns dropped
    warnings: list[ReplyWarning] = field(default_factory=list)


# --- GET /models ---------------------------------------------------------------------------------
class ComponentInfo(TypedDict, total=False):
    """A shared component a model runs on (a sentence encoder, word vectors), as the worker that answered loaded
    it; the fields after `providers` are a sentence encoder's (docs/api.md)."""

    name: str
    version: str
    providers: list[str]
    precision: str  # the file served: w8a8, int8, int8-float or fp32
    file: str
    chosen_by: str
    provider: str
    provider_chosen_by: str
    compute: str  # on OpenVINO: bf16 or f32
    bit_exact_across_batches: bool


@dataclass
class ModelInfo:
    """A served model as GET /models describes it (its card holds training data, correlations, licence)."""

    name: str
    version: str
    kind: Literal["referenced", "unreferenced", "dialogue"]
    requires: list[str]
    score_range: tuple[float, float]
    sha256: str
    providers: list[str]
    card: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    license: str = ""  # the terms of what it was trained on and built from (SPDX expression or LicenseRef-)
    commercial_use: bool = False  # whether those terms allow commercial use (the card's license_reason says why)
    # Whether an item's score is the same bits whatever shares its batch, and else the largest move with its
    # batch-mates measured, as a share of score_range (None: none measured for this provider, or not said).
    bit_exact_across_batches: bool | None = None
    batch_bound: float | None = None
    uses: list[str] = field(default_factory=list)  # the shared components it runs on, by name
    components: list[ComponentInfo] = field(default_factory=list)  # those components as loaded
    # What /score's `trained` checks items against: keys, unit, split, sets; None where it read no judged item.
    trained_items: dict[str, Any] | None = None


@dataclass
class ServedModels:
    """GET /models: the models a server has loaded, its limits, and whether it is still loading."""

    models: list[ModelInfo]
    limits: dict[str, int]
    loading: bool = False
    failed: dict[str, str] = field(default_factory=dict)  # models that failed to load, with the reason
    not_built: dict[str, str] = field(default_factory=dict)  # left out: a component they use is not built here

    def names(self) -> list[str]:
        """The served models' names."""
        return [m.name for m in self.models]


# --- /correlate ----------------------------------------------------------------------------------
class Correlation(TypedDict, total=False):
    """One correlation: r (None with a `reason` for constant input), p, a bootstrap interval and n."""

    r: float | None
    p: float | None
    # p is at its sample's floor, only known to be below it: a bootstrap p's 1/(B+1) (system level), an
    # item-level Monte Carlo permutation p's 2/10,000 (10 to 50 items)
    p_at_floor: bool
    p_reason: str
    ci: list[float] | None
    n: int
    reason: str
    ci_reason: str


class Comparison(TypedDict, total=False):
    """Whether two metrics' correlations with the humans differ: delta = r(a) - r(b), and its p."""

    a: str
    b: str
    method: str
    level: Literal["item", "system"]
    test: Literal["williams", "paired_bootstrap"]
    delta: float | None
    p: float | None
    p_at_floor: bool
    p_mc_se: float
    p_holm: float
    holm_family: int
    ci: list[float] | None
    t: float | None
    df: int | None
    reason: str


class Agreement(TypedDict, total=False):
    """Krippendorff's alpha among the human ratings, when several came per item."""

    krippendorff_alpha: float | None  # the interval metric
    krippendorff_alpha_ci: list[float] | None  # percentile bootstrap over the items with two ratings or more
    krippendorff_alpha_ordinal: float | None
    krippendorff_alpha_ordinal_ci: list[float] | None
    raters_per_item: float
    metric: str
    pairable_items: int
    resampling: dict[str, Any]  # method, confidence, resamples, seed, resampled
    reason: str  # why an alpha or an interval is null


class CorrelationReport(TypedDict, total=False):
    """/correlate's answer: `metrics[metric][level][method]` is a Correlation (levels: item, system)."""

    n: int
    metrics: dict[str, dict[str, dict[str, Correlation]]]
    systems: dict[str, Any]  # count, labels, means: {label: {n, human, metrics: {metric: mean}}}
    comparisons: list[Comparison]
    agreement: Agreement | None
    resampling: dict[str, dict[str, Any]]  # per level: method, confidence, resamples, seed, design


# --- /human-eval ---------------------------------------------------------------------------------
class RaterCheck(TypedDict, total=False):
    """Quality control of the raters: who passed, who failed, and each one's p."""

    passed: list[str]
    failed: list[str]
    p: dict[str, float | None]
    total: int
    pass_rate: float
    reasons: dict[str, str]
    constant: list[str]


class SystemSummary(TypedDict, total=False):
    """A system's ratings: raw means and z-scores per criterion, and the overall z with its interval."""

    system: str
    n: int
    n_ratings: int  # N as Ji et al. count it: dialogues x criteria
    raw: dict[str, float]
    z: dict[str, float]
    overall_z: float
    overall_z_ci: list[float] | None
    overall_z_ci_reason: str  # only where overall_z_ci is None: why (one dialogue, no spread)


class HumanEvalReport(TypedDict, total=False):
    """/human-eval's answer: `systems` best first, `significance[a][b]` the p that a beats b."""

    raters: RaterCheck
    systems: list[SystemSummary]
    intervals: dict[str, Any]  # what overall_z_ci is: {"of", "confidence" (0.95), "method", "resampled"}
    significance: dict[str, dict[str, float | None]]
    criteria: list[str]
    reversed: list[str]
    qc_criteria: list[str]
    kept_ratings: int
    quality_control: dict[str, Any] | None  # the test, its system, criteria and alpha
    warnings: list[str]
