"""Request and response schemas: the same objects validate requests and write /openapi.json.

Structure and types are checked here (422); size limits are configuration and are checked in
service/api/limits.py (413), because they are not part of a payload's validity.
"""
from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, post_load, validate, validates_schema

from service.api.warnings import CODES as WARNING_CODES
from service.artifacts import batch_bounds
from service.scorers.base import Dialogue, Item, Turn
from service.stats.correlation import METHODS
from service.stats.designs import DEFAULT_DESIGN, DEFAULT_ITEM_DESIGN, DESIGNS, INPUTS, ITEM_DESIGNS
from service.json_body import TOO_LARGE
from service.text import is_blank

_nonempty_list = validate.Length(min=1)
_REFERENCE = ("A human reply; required, and not blank, by `referenced` models, unless asked for their "
              "reference-free part (options.reference_free).")  # /score items, /rerank
_REFERENCE_FREE = ("Extension: `reference_free: true`, on a referenced model whose options list it (GET /models), "
                   "scores the part of the formula that reads no reference (RUBER's s_U; the context cosine), so no "
                   "reference is needed.")
ON_INVALID = ("reject", "skip")
_ON_INVALID = ("Extension. `reject` (the default): an invalid {what} fails the whole request (413 where one is over "
               "a per-utterance limit, those named in `details`; else 422 naming every invalid {what}). `skip`: "
               "invalid {what}s are left out and the rest is scored; the response names them in `skipped` "
               "(indices) and `errors` (field paths to messages, as an error's `details`){null}. A request that "
               "leaves nothing to score still fails (413 if one was over a limit, else 422, `details` naming every "
               "problem), as does one whose problem is not one {what}'s own content (the number of {what}s, the "
               "model, the options{shared}). {article} {what} that is not a JSON {json} (a `null`) is an invalid "
               "{what} like any other.")


def _on_invalid(what: str, null: str, shared: str, json: str) -> fields.String:
    article = "An" if what[0] in "aeiou" else "A"
    return fields.String(load_default="reject", validate=validate.OneOf(ON_INVALID), metadata={
        "description": _ON_INVALID.format(what=what, null=null, shared=shared, json=json, article=article),
        "example": "skip"})


class Elements(fields.List):
    """A JSON array whose elements the data plane checks one at a time (`element_errors`), so that under
    `on_invalid: "skip"` an element of the wrong type (a `null` candidate) leaves out that element alone;
    /openapi.json types the elements as `inner` all the same."""

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[override]
        if not isinstance(value, list):
            raise self.make_error("invalid")
        return list(value)


def element_errors(schema: Schema, name: str, values: list[Any]) -> dict[str, str]:
    """Each of `values` that is not what the schema's Elements field `name` holds, keyed `<name>.<i>`."""
    inner = schema.fields[name].inner
    errors: dict[str, str] = {}
    for i, value in enumerate(values):
        try:
            inner.deserialize(value)
        except ValidationError as exc:
            errors.update(flatten_messages(exc.messages, f"{name}.{i}"))
    return errors


ON_LONG_CONTEXT = ("reject", "keep_last")
_ON_LONG_CONTEXT = ("Extension. `reject` (the default): a context over `max_turns` (or with an utterance over `max_chars`) "
                    "is a 413, as the `limits` of GET /models say. `keep_last`: each context is cut to its last turns, "
                    "as many as the named models read (the most of them, at least 1, at most `max_turns`): a "
                    "model's score of the cut context is its score of the whole, and nothing over a limit in the "
                    "dropped turns is refused. The response then says how many turns were dropped "
                    "(`context_dropped`{where}).")


def _on_long_context(where: str) -> fields.String:
    return fields.String(load_default="reject", validate=validate.OneOf(ON_LONG_CONTEXT), metadata={
        "description": _ON_LONG_CONTEXT.format(where=where), "example": "keep_last"})


_SKIPPED = fields.List(fields.Integer(), metadata={
    "description": "Only under `on_invalid: \"skip\"`, when something was left out: the indices left out."})
_SKIP_ERRORS = fields.Dict(keys=fields.String(), values=fields.String(), metadata={
    "description": "Only with `skipped`: why each was left out, by field path (`items.3.reference` for /score, "
                   "`candidates.3` for /rerank)."})


# Bound on every number a client sends: squares and sums of larger finite values overflow to
# inf/NaN in the statistics (z-scores, Krippendorff's alpha), which the contract never answers.
MAX_MAGNITUDE = 1e15


class Number(fields.Float):
    """A JSON number, finite and within +-MAX_MAGNITUDE. marshmallow's Float also casts numeric strings
    ("5") and booleans; the OpenAPI document declares numbers, so a string is a client bug to report,
    not to guess at."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(allow_nan=False, **kwargs)
        # The body's reader refuses NaN and Infinity (400), so what comes here over HTTP is a number that
        # overflowed; the analysis command's files may hold NaN.
        self.error_messages["special"] = f"A number {TOO_LARGE} (it reads as infinity), or NaN: send a finite number."
        self.validators.append(validate.Range(min=-MAX_MAGNITUDE, max=MAX_MAGNITUDE, error=(
            f"Must be within -{MAX_MAGNITUDE:g} and {MAX_MAGNITUDE:g} (larger values overflow the statistics).")))

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[override]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


class Whole(fields.Integer):
    """A JSON integer: no strings ("2"), booleans or fractions (1.5 would be silently truncated)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(strict=True, **kwargs)


class StrictSchema(Schema):
    class Meta:
        unknown = RAISE
        ordered = True


# --- scoring -----------------------------------------------------------------------------------
class ItemSchema(StrictSchema):
    context = fields.List(fields.String(), required=True, validate=_nonempty_list,
                          metadata={"description": "Utterances, oldest first (1..max_turns).",
                                    "example": ["hey, what do you want to do tonight?", "why don't we go see a movie?"]})
    response = fields.String(required=True, metadata={"description": "The reply to score.",
                                                      "example": "nah, let's do something active."})
    reference = fields.String(allow_none=True, load_default=None,
                              metadata={"description": _REFERENCE,
                                        "example": "yeah, the film about turing looks great!"})

    @post_load
    def _item(self, data: dict, **_: object) -> Item:
        return Item(list(data["context"]), data["response"], data["reference"])


class TurnSchema(StrictSchema):
    speaker = fields.String(required=True, validate=validate.OneOf(["user", "bot"]))
    text = fields.String(required=True)


class DialogueSchema(StrictSchema):
    turns = fields.List(fields.Nested(TurnSchema), required=True, validate=_nonempty_list,
                        metadata={"description": "The whole conversation, oldest first (1..max_dialogue_turns)."})

    @validates_schema
    def _has_bot_turn(self, data: dict, **_: object) -> None:
        # Turns whose text is empty or whitespace are dropped before scoring (service/scorers/mh/proxies.py,
        # as training read its conversations), so they cannot be the bot turn a dialogue needs: a
        # conversation whose only bot turn is blank would be scored as an all-user one, which is refused.
        if not any(t["speaker"] == "bot" and not is_blank(t["text"]) for t in data["turns"]):
            raise ValidationError("A dialogue needs at least one bot turn with text (blank turns are dropped).",
                                  "turns")

    @post_load
    def _dialogue(self, data: dict, **_: object) -> Dialogue:
        return Dialogue([Turn(t["speaker"], t["text"]) for t in data["turns"]])


class ScoreRequestSchema(StrictSchema):
    model = fields.String(metadata={"description": "The model to score with (see GET /models).", "example": "adem"})
    models = fields.List(fields.String(), validate=_nonempty_list,
                         metadata={"description": "Extension: several models on the same items; each distinct "
                                                  "utterance is encoded once. Give `model` or `models`."})
    items = Elements(fields.Dict(), required=True, validate=_nonempty_list,
                        metadata={"description": "Item objects ({context, response, reference?}) or, for "
                                                 "`dialogue` models, {turns}."})
    options = fields.Dict(load_default=dict, metadata={"description": "Model-specific options; unknown keys are 422. "
                                                       + _REFERENCE_FREE})
    on_invalid = _on_invalid("item", "; their `scores` (and `details`) are null", ", the encoder's word-piece cap",
                             "object")
    on_long_context = _on_long_context(", per item; a dialogue model's `turns` are never cut")

    @validates_schema
    def _one_model(self, data: dict, **_: object) -> None:
        if ("model" in data) == ("models" in data):
            raise ValidationError("Give exactly one of `model` or `models`.", "model")


class WarningSchema(StrictSchema):
    index = fields.Integer(required=True, metadata={"description": "The item (/score) or candidate (/rerank)."})
    code = fields.String(required=True, validate=validate.OneOf(["not_english", "no_words", "empty"]), metadata={
        "description": "`not_english`: the reply is mostly in a script English is not written in, or a language "
                       "identifier names another language with confidence (DIALSCORE_NOT_ENGLISH_CONFIDENCE); "
                       "`no_words`: no letter or digit (emoji, punctuation); `empty`: blank. docs/api.md says "
                       "what a bot should do with each."})
    message = fields.String(required=True)


_WARNINGS = fields.List(fields.Nested(WarningSchema), metadata={
    "description": "Only where some reply (the `response` of an item scored, a candidate ranked) is text the models "
                   "were not made to read; the score is still given. Counted in dialscore_warnings_total."})
_CONTEXT_DROPPED_ITEMS = fields.List(fields.Integer(), metadata={
    "description": "Only under `on_long_context: \"keep_last\"`: per item, the context turns dropped (0 where none)."})
_HUMAN_PERCENTILE = (
    "Reference-free models that ship a table of their scores of real next turns (`human_percentile.json` in the "
    "model folder): the share, in [0, 1], of human next turns (up to four from each of 3,612 Chit-Chat conversations) that "
    "this reply outscores (ties count half), per item (null for a skipped one). 0.5 is a typical human reply; a bot can "
    "threshold it (the README's re-ranking section gives operating points). Absent for other models.")


class ModelScoresSchema(StrictSchema):
    """One model's scores: the /score response for `model`, and each entry of `results` for `models`."""

    model = fields.String(required=True)
    version = fields.String(required=True)
    scores = fields.List(fields.Float(allow_none=True), required=True, metadata={
        "description": "Per item; null only for an item left out under `on_invalid: \"skip\"`."})
    details = fields.List(fields.Dict(keys=fields.String(), allow_none=True), metadata={"description": (
        "Per item, parallel to `scores`, where the model or its options give components (the terms of its formula, "
        "a proxy's value): its card and options in GET /models say which.")})
    human_percentile = fields.List(fields.Float(allow_none=True), metadata={"description": _HUMAN_PERCENTILE})
    trained = fields.List(fields.Integer(), metadata={"description": (
        "Only where some are: the items (indices) that are this model's training items, matched by their last "
        "context turn and reply in any spelling (a leading speaker tag aside): their scores are not held-out "
        "figures; leave them out of an evaluation. Checked for the learned models that ship their training keys "
        "(GET /models: `trained_items`).")})


class ScoreResponseSchema(ModelScoresSchema):
    skipped = _SKIPPED
    errors = _SKIP_ERRORS
    context_dropped = _CONTEXT_DROPPED_ITEMS
    warnings = _WARNINGS


class RerankRequestSchema(StrictSchema):
    model = fields.String(required=True, metadata={"example": "autojudge"})
    context = fields.List(fields.String(), required=True, validate=_nonempty_list,
                          metadata={"example": ["hi! how was your weekend?"]})
    candidates = Elements(fields.String(), required=True, validate=_nonempty_list,
                             metadata={"example": ["i don't know.", "great, i went hiking with my sister!"]})
    reference = fields.String(allow_none=True, load_default=None,
                              metadata={"description": _REFERENCE})
    top_k = Whole(allow_none=True, load_default=None, validate=validate.Range(min=1))
    options = fields.Dict(load_default=dict, metadata={"description": "Model-specific options; unknown keys are 422. "
                                                       + _REFERENCE_FREE})
    on_invalid = _on_invalid("candidate", "; they are not in `ranking`",
                             ", the context, the reference, the encoder's word-piece cap", "string")
    on_long_context = _on_long_context(", once")
    exclude_warned = fields.List(fields.String(validate=validate.OneOf(WARNING_CODES)), load_default=list, metadata={
        "description": "Warning codes whose candidates are left out of `ranking` before `top_k` (still named in "
                       "`warnings`, and not scored): `empty`, `no_words`, `not_english`. A bot that never sends "
                       "a blank reply sends `[\"empty\"]`.", "example": ["empty", "no_words"]})


class MultiScoreResponseSchema(StrictSchema):
    """/score with `models`: every model's response, keyed by name, plus the contract's model and version."""

    model = fields.String(required=True, metadata={"description": "The requested models, comma-separated.",
                                                   "example": "adem,ruber"})
    version = fields.String(required=True, metadata={"description": "name=version of each model, comma-separated.",
                                                     "example": "adem=2026.11.0,ruber=2026.11.0"})
    models = fields.List(fields.String(), required=True)
    results = fields.Dict(keys=fields.String(), values=fields.Nested(ModelScoresSchema), required=True)
    skipped = _SKIPPED
    errors = _SKIP_ERRORS
    context_dropped = _CONTEXT_DROPPED_ITEMS
    warnings = _WARNINGS


class RankedSchema(StrictSchema):
    index = fields.Integer(required=True)
    response = fields.String(required=True)
    score = fields.Float(required=True)
    human_percentile = fields.Float(validate=validate.Range(min=0.0, max=1.0),
                                    metadata={"description": _HUMAN_PERCENTILE})
    details = fields.Dict(keys=fields.String(), allow_none=True, metadata={"description": (
        "Where the model or its options give components, as /score's `details` give them for this candidate.")})


class RerankResponseSchema(StrictSchema):
    model = fields.String(required=True)
    version = fields.String(required=True)
    ranking = fields.List(fields.Nested(RankedSchema), required=True)
    skipped = _SKIPPED
    errors = _SKIP_ERRORS
    context_dropped = fields.Integer(metadata={
        "description": "Only under `on_long_context: \"keep_last\"`: the context turns dropped (0 where none)."})
    warnings = _WARNINGS


# --- analysis ----------------------------------------------------------------------------------
class HumanScoresField(fields.Field):
    """A list of numbers, or a list of lists of numbers (several ratings per item, averaged)."""

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[override]
        if not isinstance(value, list) or not value:
            raise ValidationError("Must be a non-empty list of numbers or of lists of numbers.")
        number = Number()

        def item(entry: Any) -> Any:
            if not isinstance(entry, list):
                return number.deserialize(entry)
            if not entry:
                raise ValidationError("Must hold at least one rating.")
            return _each(entry, number.deserialize)  # a bad rating named inside its item: `human.1.1`

        return _each(value, item)


def _each(values: list, read: Any) -> list:
    """`read` of each value; the failures raised together, each under its index."""
    out, errors = [], {}
    for i, value in enumerate(values):
        try:
            out.append(read(value))
        except ValidationError as exc:
            errors[i] = exc.messages
    if errors:
        raise ValidationError(errors)
    return out


# A blank label would make a system of its own out of the items nobody labelled; the CSV and DSTC
# importers refuse such rows too. Also in the document: a pattern that reads alike in Python and ECMAScript.
NOT_BLANK = r"^[\s\S]*\S"
_system_label = validate.Regexp(NOT_BLANK, error="Must name a system (not blank): label every item, or leave "
                                                 "`systems` out.")


class CorrelateRequestSchema(StrictSchema):
    human = HumanScoresField(required=True, metadata={
        "description": "Human scores per item, or a list of ratings per item (averaged).", "example": [3.0, 4.5, 1.0]})
    scores = fields.Dict(keys=fields.String(), values=fields.List(Number()), required=True,
                         validate=_nonempty_list,
                         metadata={"example": {"adem": [2.9, 4.0, 1.7], "bleu4": [0.1, 0.0, 0.2]}})
    systems = fields.List(fields.String(validate=_system_label), load_default=None, allow_none=True,
                          metadata={"description": "System of each item: adds system-level correlations. Every "
                                                   "item needs a label that is not blank (as a CSV's system column).",
                                    "example": ["hred", "human", "tfidf"]})
    methods = fields.List(fields.String(validate=validate.OneOf(METHODS)),
                          load_default=lambda: list(METHODS), validate=_nonempty_list, metadata={
                              "description": "pearson: Pearson's r; spearman: Spearman's rho; kendall: Kendall's "
                                             "tau-b, which corrects for ties in either variable (scipy.stats."
                                             "kendalltau's default), at both levels."})
    confidence = Number(load_default=0.95, validate=validate.Range(min=0, max=1, min_inclusive=False,
                                                                       max_inclusive=False))
    resamples = Whole(load_default=1000, validate=validate.Range(min=0), metadata={
        "description": "Bootstrap resamples for the intervals and paired tests; 0 turns them off, and fewer "
                       "than 2 / (1 - confidence) (40 at 0.95) give `ci: null` with a `ci_reason`."})
    seed = Whole(load_default=0, validate=validate.Range(min=0))
    inputs = fields.List(fields.String(), load_default=None, allow_none=True, metadata={
        "description": "The input (e.g. the context) each item answers: where systems answered the same ones, the "
                       "system level's `items` and `both` then resample whole inputs, each with every system's items "
                       "for it, instead of items within each system (`systems` draws no items); with "
                       "`item_resampling` inputs, the item level draws whole inputs too, with or without `systems`.",
        "example": ["c1", "c1", "c1"]})
    item_resampling = fields.String(load_default=DEFAULT_ITEM_DESIGN, validate=validate.OneOf(ITEM_DESIGNS), metadata={
        "description": "What the item level's bootstrap resamples: `items` (the default), as independent draws, or "
                       "`inputs` (needs `inputs`): whole inputs, each with every item that answers it, for a claim "
                       "beyond the inputs in hand, where several replies to one input are rated. Its p then comes "
                       "from the same resamples, and pairs of metrics are compared by the paired bootstrap alone "
                       "(Williams' t takes the items as independent)."})
    system_resampling = fields.String(load_default=DEFAULT_DESIGN, validate=validate.OneOf(DESIGNS), metadata={
        "description": "What the system level's bootstrap resamples (Deutsch, Dror and Roth 2021): `systems` (with "
                       "replacement, each keeping its items), `items` (within each system; the systems fixed) or "
                       "`both` (systems, then items within each drawn one, each copy of a system its own). `both` is "
                       "the default: in simulation with item scatter correlated like the systems its 95% intervals "
                       "held the population correlation at about the nominal rate with 5 and with 20 systems, items "
                       "nested in systems or shared inputs named in `inputs`, where `items` and `systems` fell "
                       "short. Where people's and the metric's item scatter are independent and systems have few "
                       "items, `both`'s and `items`' intervals sit below r (resampled items add their scatter "
                       "twice); with many systems choose `systems` there (docs/api.md, 'What a system-level "
                       "interval resamples')."})


def _label(what: str) -> list[validate.Validator]:
    """A rating's rater, system or item: not blank, as /correlate's system labels (a rater or system
    named "   " would be ranked as one). In the document: minLength 1 and the pattern."""
    return [validate.Length(min=1, error="Must be a non-empty string."),
            validate.Regexp(NOT_BLANK, error=f"Must name the {what} (not blank).")]


class RatingSchema(StrictSchema):
    rater = fields.String(required=True, validate=_label("rater"))
    system = fields.String(required=True, validate=_label("system"))
    item = fields.String(required=True, validate=_label("item"))
    scores = fields.Dict(keys=fields.String(), values=Number(), required=True,
                         validate=_nonempty_list)


class HumanEvalRequestSchema(StrictSchema):
    ratings = fields.List(fields.Nested(RatingSchema), required=True, validate=_nonempty_list)
    reverse = fields.List(fields.String(), load_default=list,
                          metadata={"description": "Negative attributes, reversed as hi + lo - score.",
                                    "example": ["robotic", "repetitive"]})
    scale = fields.List(Number(), load_default=lambda: [0.0, 100.0],
                        validate=validate.Length(equal=2))
    qc_system = fields.String(load_default=None, allow_none=True,
                              metadata={"description": "The degraded quality-control system.", "example": "degraded"})
    alpha = Number(load_default=0.05, validate=validate.Range(min=0, max=1, min_inclusive=False,
                                                                     max_inclusive=False))
    qc_criteria = fields.List(fields.String(), load_default=None, allow_none=True,
                              metadata={"description": "Criteria pooled in the quality-control test; default: "
                                                       "those not in `reverse` (as upstream's released code)."})

    @validates_schema
    def _scale_ordered(self, data: dict, **_: object) -> None:
        if data["scale"][0] >= data["scale"][1]:
            raise ValidationError("The scale's low end must be below its high end.", "scale")


# --- responses that only document (the handlers build them; tests load real ones through these) --
class StatusSchema(StrictSchema):
    status = fields.String(required=True)
    models = fields.List(fields.String())
    workers_ready = fields.Integer(validate=validate.Range(min=0), metadata={
        "description": "/readyz under gunicorn: workers of this pod whose models have loaded (200 once all of "
                       "them have, then while any serves)."})
    workers = fields.Integer(validate=validate.Range(min=1), metadata={
        "description": "/readyz under gunicorn: workers the pod's master runs. Readiness is the pod's, "
                       "not only that of the worker that answered."})


class ComponentInfoSchema(StrictSchema):
    name = fields.String(required=True)
    version = fields.String(required=True)
    providers = fields.List(fields.String(), required=True,
                            metadata={"description": "Execution providers its sessions really got."})
    precision = fields.String(validate=validate.OneOf(["w8a8", "int8", "int8-float", "fp32"]),
                              metadata={"description": "Sentence encoder only: which file is served, and how "
                                                       "(DIALSCORE_ENCODER_PRECISION, auto: fp32 on CUDA where "
                                                       "built, w8a8 where built on a CPU with integer dot "
                                                       "products, else the component's CPU file: int8-float for "
                                                       "MiniLM, the int8 file's weights in float arithmetic, on "
                                                       "the CPU EP and on OpenVINO; the files' scores differ "
                                                       "slightly)."})
    file = fields.String(metadata={"description": "Sentence encoder only: the ONNX file loaded."})
    chosen_by = fields.String(metadata={"description": "Sentence encoder only: why that file, e.g. "
                                                       "\"auto: the CPU reports avx2\"."})
    provider = fields.String(metadata={"description": "Sentence encoder only: the execution provider that runs "
                                                      "its graph (the first of `providers`)."})
    provider_chosen_by = fields.String(metadata={"description": "Sentence encoder only: why that provider "
                                                                "(DIALSCORE_PROVIDERS, auto's rule), e.g. \"auto: "
                                                                "the CPU reports amx_bf16\"."})
    compute = fields.String(validate=validate.OneOf(["bf16", "f32"]), metadata={
        "description": "Sentence encoder on OpenVINO only: the precision OpenVINO computes in."})
    bit_exact_across_batches = fields.Boolean(metadata={
        "description": "Sentence encoder only: whether a text's vector is the same bits whatever shares its "
                       "batch."})


class ModelInfoSchema(StrictSchema):
    name = fields.String(required=True)
    version = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(["referenced", "unreferenced", "dialogue"]))
    requires = fields.List(fields.String(), required=True)
    score_range = fields.List(fields.Float(), required=True, validate=validate.Length(equal=2))
    sha256 = fields.String(required=True, metadata={"description": "Digest over the model's artifact files."})
    providers = fields.List(fields.String(), required=True,
                            metadata={"description": "Execution providers the sessions really got."})
    bit_exact_across_batches = fields.Boolean(required=True, metadata={
        "description": "Whether an item's score is the same bits whatever other items share its request: true "
                       "where every session runs on the CPU EP; false on OpenVINO and CUDA, where a score may "
                       "move with its batch-mates within `batch_bound`."})
    license = fields.String(required=True, metadata={
        "description": "The terms of what the model was trained on and built from, as an SPDX expression, or a "
                       "`LicenseRef-`: `LicenseRef-unstated` for data whose upstream states no licence (and for a "
                       "model whose card states none). The card's `license_reason` says which parts decide them.",
        "example": "Apache-2.0 AND MIT"})
    commercial_use = fields.Boolean(required=True, metadata={
        "description": "Whether those terms allow commercial use of the model (false where any part is "
                       "non-commercial or states no licence). The terms as stated, not legal advice."})
    batch_bound = fields.Float(allow_none=True, metadata={
        "description": f"How far a score may move with its batch-mates, as a share of `score_range`: {batch_bounds.MARGIN} times "
                       "the largest move make bench measured on the provider and compute its encoders run on here "
                       "(the largest seen grows with the sets tried); 0 where bit_exact_across_batches; null "
                       "where none was measured for them yet (docs/api.md)."})
    card = fields.Dict(required=True, metadata={"description": "Training data, held-out correlations, licence, "
                                                               "citation (the model's README.md as fields)."})
    trained_items = fields.Dict(required=True, allow_none=True, metadata={
        "description": "Where the model ships its training keys, what /score's `trained` checks items against: "
                       "how many (`keys`), their `unit`, the `split`, the judged `sets` (items each) and, for "
                       "models trained on dialogues (`pairs`: sources, and the judged sets' items that are "
                       "pairs of its training dialogues), where they come from; null for a model that ships "
                       "none (a baseline, mh's whole conversations)."})
    options = fields.Dict(required=True, metadata={"description": "The model's `options`, with types and defaults."})
    uses = fields.List(fields.String(), required=True, metadata={"description": "Shared components it runs on."})
    components = fields.List(fields.Nested(ComponentInfoSchema), required=True,
                             metadata={"description": "The components in `uses` as this worker loaded them."})


class ModelsResponseSchema(StrictSchema):
    models = fields.List(fields.Nested(ModelInfoSchema), required=True)
    limits = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    failed = fields.Dict(keys=fields.String(), values=fields.String(), required=True,
                         metadata={"description": "Models or components that failed to load, with the reason."})
    not_built = fields.Dict(keys=fields.String(), values=fields.String(), metadata={
        "description": "Models left out because a component they use is not built on this server (e.g. "
                       "mpnet-base, `make encoder-mpnet`), with the reason; not failures: /readyz stays ready."})
    loading = fields.Boolean(required=True)


class CorrelationSchema(StrictSchema):
    r = fields.Float(required=True, allow_none=True, metadata={
        "description": "The correlation: Pearson's r, Spearman's rho or Kendall's tau-b (ties corrected)."})
    p = fields.Float(required=True, allow_none=True, metadata={"description": (
        "Two-sided p of r = 0. Item level: scipy's, except exact permutation p-values for few items (Spearman; "
        "Kendall with ties) and Monte Carlo permutation p-values on up to 50 (Spearman; Kendall with ties). System "
        "level, and item level under `item_resampling` inputs: from the same bootstrap resamples as `ci`, "
        "(2k + 1) / (B + 1) with k the resamples on the smaller side of 0, so the interval excludes 0 where "
        "p < 1 - confidence; null without a bootstrap (`p_reason`).")})
    p_at_floor = fields.Boolean(metadata={"description": (
        "A bootstrap p (system level; item level by inputs): no resample fell on the other side of 0, so p sits "
        "at its floor 1 / (B + 1): smaller than B resamples resolve (a p of about 2 / (B + 1) lands there too); "
        "raise `resamples` for a figure. An item-level Monte Carlo permutation p (10 to 50 items): no sampled "
        "pairing was as extreme as the observed one, so p sits at 2 / (9,999 + 1), .0002, and is smaller.")})
    p_mc_se = fields.Float(metadata={"description": (
        "Where p is a Monte Carlo estimate (from B bootstrap resamples; or at item level, a rank "
        "correlation's p from 9,999 sampled pairings), its Monte Carlo standard error, 2 sqrt(q (1 - q) / B) with "
        "q = p / 2 (p doubles the smaller tail). Absent where p is exact or scipy's.")})
    p_reason = fields.String(metadata={"description": "Why a bootstrap p is null."})
    resamples_defined = fields.Integer(metadata={"description": (
        "A bootstrap p's B where some resamples left the correlation undefined (a side constant): p counts "
        "these, not the resamples asked for. Absent where every resample was defined.")})
    ci = fields.List(fields.Float(), required=True, allow_none=True, metadata={"description": (
        "Percentile bootstrap interval at `confidence`: at item level, what `item_resampling` names; at system "
        "level, what `system_resampling` names (the response's `resampling` says it for each level).")})
    n = fields.Integer(required=True)
    reason = fields.String(metadata={"description": "Why r is null."})
    ci_reason = fields.String(metadata={"description": "Why ci is null."})


class ComparisonSchema(StrictSchema):
    a = fields.String(required=True)
    b = fields.String(required=True)
    method = fields.String(required=True)
    level = fields.String(required=True, validate=validate.OneOf(["item", "system"]))
    test = fields.String(required=True, validate=validate.OneOf(["williams", "paired_bootstrap"]), metadata={
        "description": "williams: Williams' t for two dependent correlations sharing the human side (Steiger 1980 "
                       "eq. 7, as Graham & Baldwin 2014), two-sided; Pearson only, and not at the item level under "
                       "`item_resampling` inputs (it takes the items as independent). paired_bootstrap: the same resamples for both "
                       "metrics; ci the deltas' percentile interval and p its dual, (2k + 1) / (B + 1) with k the deltas "
                       "on the smaller side of 0, two-sided, so the interval excludes 0 where p < 1 - confidence "
                       "(up to interpolation). Each p is its test's own, uncorrected for the other comparisons."})
    delta = fields.Float(required=True, allow_none=True, metadata={"description": "r(a) - r(b)."})
    p = fields.Float(required=True, allow_none=True)
    p_at_floor = fields.Boolean(metadata={"description": (
        "paired_bootstrap: no resample's delta lay on the other side of 0, so p sits at its floor 1 / (B + 1), "
        "smaller than B resamples resolve; raise `resamples` for a figure.")})
    p_mc_se = fields.Float(metadata={"description": (
        "paired_bootstrap: the Monte Carlo standard error of p over the B resamples, 2 sqrt(q (1 - q) / B) "
        "with q = p / 2.")})
    resamples_defined = fields.Integer(metadata={"description": (
        "paired_bootstrap: B where some resamples left a delta undefined: p counts these. Absent where all were.")})
    p_holm = fields.Float(metadata={"description": (
        "p Holm-adjusted over its family: the comparisons of the same level, method and test that have a p "
        "(every pair of metrics), `holm_family` of them; holds the chance of any false claim among them.")})
    holm_family = fields.Integer(metadata={"description": "How many comparisons `p_holm` is adjusted over."})
    ci = fields.List(fields.Float(), allow_none=True)
    t = fields.Float(allow_none=True)
    df = fields.Integer(allow_none=True)
    reason = fields.String()


class ResamplingSchema(StrictSchema):
    method = fields.String(required=True, metadata={"description": "How intervals are built: percentile bootstrap."})
    confidence = fields.Float(required=True)
    resamples = fields.Integer(required=True, metadata={"description": "B, as requested."})
    seed = fields.Integer(required=True)
    design = fields.String(required=True, validate=validate.OneOf((*DESIGNS, INPUTS)),
                           metadata={"description": "What is resampled: `system_resampling` at the system level, "
                                                    "`item_resampling` at the item level."})
    resampled = fields.String(required=True, metadata={"description": "The design in words."})
    p = fields.String(required=True, metadata={"description": "How this level's correlation p-values are found."})
    comparisons = fields.String(required=True, metadata={"description": "How pairs of metrics are compared."})
    reason = fields.String(metadata={"description": "Why nothing was resampled (intervals null)."})
    inputs = fields.Integer(metadata={"description": "Item level under `item_resampling` inputs: how many inputs "
                                                     "the draws pick from (with few, say under 20, a cluster "
                                                     "bootstrap's intervals are too narrow)."})


_INTERVAL = fields.List(fields.Float(), required=True, allow_none=True, validate=validate.Length(equal=2), metadata={
    "description": "The alpha's percentile bootstrap interval, [low, high], at the request's `confidence`; null "
                   "with `reason`."})


class AgreementResamplingSchema(StrictSchema):
    method = fields.String(required=True)
    confidence = fields.Float(required=True)
    resamples = fields.Integer(required=True, metadata={"description": "B, the request's `resamples`."})
    seed = fields.Integer(required=True, metadata={"description": "The request's `seed`."})
    resampled = fields.String(required=True, metadata={"description": "What a resample draws, in words."})


class AgreementSchema(StrictSchema):
    krippendorff_alpha = fields.Float(required=True, allow_none=True, metadata={
        "description": "Krippendorff's alpha with the interval metric (`metric`): ratings as numbers."})
    krippendorff_alpha_ordinal = fields.Float(required=True, allow_none=True, metadata={
        "description": "Krippendorff's alpha with the ordinal metric: ratings as ranks on their scale (Likert "
                       "items, whose steps need not be equal)."})
    krippendorff_alpha_ci = _INTERVAL
    krippendorff_alpha_ordinal_ci = _INTERVAL
    raters_per_item = fields.Float(required=True)
    metric = fields.String(required=True, metadata={"description": "The metric of `krippendorff_alpha`."})
    pairable_items = fields.Integer(required=True, metadata={
        "description": "The items with two ratings or more: the only ones alpha and its resamples read."})
    resampling = fields.Nested(AgreementResamplingSchema, required=True)
    reason = fields.String(metadata={"description": "Why an alpha or an interval is null."})


_BY_METHOD = fields.Dict(keys=fields.String(), values=fields.Nested(CorrelationSchema))


class CorrelateResponseSchema(StrictSchema):
    dialscore = fields.String(required=True, metadata={
        "description": "The tool's version that computed this answer (docs/citing.md): cite it with the figures."})
    n = fields.Integer(required=True)
    metrics = fields.Dict(keys=fields.String(), required=True,
                          values=fields.Dict(keys=fields.String(validate=validate.OneOf(["item", "system"])),
                                             values=_BY_METHOD),
                          metadata={"description": "metric -> level (item, system) -> method -> {r, p, ci, n}."})
    systems = fields.Dict(metadata={"description": "When `systems` was given: {count, labels, means}, `means` "
                                                   "{label: {n, human, metrics: {metric: mean}}}, each system's items "
                                                   "and the means its system-level correlations read."})
    comparisons = fields.List(fields.Nested(ComparisonSchema), required=True)
    agreement = fields.Nested(AgreementSchema, required=True, allow_none=True,
                              metadata={"description": "Krippendorff's alpha when several ratings per item came."})
    resampling = fields.Dict(keys=fields.String(validate=validate.OneOf(["item", "system"])),
                             values=fields.Nested(ResamplingSchema), metadata={
                                 "description": "Per level: the interval method, confidence, resamples (B), seed and "
                                                "design its intervals and bootstrap p-values come from."})


class RatersSchema(StrictSchema):
    passed = fields.List(fields.String(), required=True)
    failed = fields.List(fields.String(), required=True)
    p = fields.Dict(keys=fields.String(), values=fields.Float(allow_none=True), required=True)
    total = fields.Integer(required=True)
    pass_rate = fields.Float(required=True)
    reasons = fields.Dict(keys=fields.String(), values=fields.String())
    constant = fields.List(fields.String())


class SystemSummarySchema(StrictSchema):
    system = fields.String(required=True)
    n = fields.Integer(required=True, metadata={"description": "Dialogues (ratings of every criterion) kept."})
    n_ratings = fields.Integer(required=True, metadata={
        "description": "N as Ji et al. 2022 count it (Table 3): kept dialogues x criteria, one score each."})
    raw = fields.Dict(keys=fields.String(), values=fields.Float(), required=True)
    z = fields.Dict(keys=fields.String(), values=fields.Float(), required=True)
    overall_z = fields.Float(required=True)
    overall_z_ci = fields.List(fields.Float(), required=True, allow_none=True, metadata={
        "description": "95% Student-t interval of the mean per-dialogue z (the body's `intervals` says so); "
                       "null below two dialogues or where they do not vary, and `overall_z_ci_reason` says which."})
    overall_z_ci_reason = fields.String(metadata={
        "description": "Only where `overall_z_ci` is null: why, e.g. \"one dialogue (a t interval needs two)\"."})


class QualityControlSchema(StrictSchema):
    test = fields.String(required=True)
    qc_system = fields.String(required=True)
    criteria = fields.List(fields.String(), required=True, metadata={"description": "The criteria the test pools."})
    alpha = fields.Float(required=True)
    passes = fields.String(required=True, metadata={"description": "A rater passes where this holds."})


class IntervalsSchema(StrictSchema):
    of = fields.String(required=True, metadata={"description": "The field of each system that holds the interval."})
    confidence = fields.Float(required=True, metadata={
        "description": "Its level: fixed (0.95), not the quality-control threshold `alpha`."})
    method = fields.String(required=True)
    resampled = fields.String(metadata={"description": "What the interval draws: nothing (it is a t interval)."})


def p_matrix(description: str) -> fields.Dict:
    """A system-by-system table of p-values, row against column."""
    return fields.Dict(keys=fields.String(), required=True, metadata={"description": description},
                       values=fields.Dict(keys=fields.String(), values=fields.Float(allow_none=True)))


class SignificanceTestsSchema(StrictSchema):
    test = fields.String(required=True, metadata={"description": "The test of each cell, row against column."})
    significance = fields.String(required=True, metadata={"description": "What `significance` holds: uncorrected p."})
    significance_holm = fields.String(required=True, metadata={
        "description": "What `significance_holm` holds: the same p-values Holm-adjusted over `family` tests."})
    family = fields.Integer(required=True, metadata={
        "description": "Tests the adjustment counts: every ordered pair of systems with a p, k(k - 1) for k systems."})


class HumanEvalResponseSchema(StrictSchema):
    dialscore = fields.String(required=True, metadata={
        "description": "The tool's version that computed this answer (docs/citing.md): cite it with the figures."})
    raters = fields.Nested(RatersSchema, required=True)
    systems = fields.List(fields.Nested(SystemSummarySchema), required=True, metadata={"description": "Best first."})
    intervals = fields.Nested(IntervalsSchema, required=True, metadata={
        "description": "What each system's `overall_z_ci` is: its confidence level and how it is computed."})
    significance = p_matrix(
        "Uncorrected p of the one-sided rank-sum test that row beats column: each test alone, not adjusted for "
        "the k(k - 1) tests of the matrix (as Ji et al. report them). Read claims about several pairs from "
        "`significance_holm`.")
    significance_holm = p_matrix(
        "The same tests' p Holm-adjusted over every ordered pair of systems (`significance_tests.family` tests): "
        "read as findings, the cells below alpha hold a false claim with a chance of at most alpha.")
    significance_tests = fields.Nested(SignificanceTestsSchema, required=True, metadata={
        "description": "The pairwise test, and which of `significance` and `significance_holm` is corrected."})
    criteria = fields.List(fields.String(), required=True)
    reversed = fields.List(fields.String(), required=True,
                           metadata={"description": "The criteria reversed: those of `criteria` named in the request's "
                                                    "`reverse` (an entry no rating uses reverses nothing: it is missing "
                                                    "here and named in `warnings`)."})
    qc_criteria = fields.List(fields.String(), required=True)
    kept_ratings = fields.Integer(required=True, metadata={
        "description": "Dialogues of the ordinary systems by passed raters (a rating here scores every criterion)."})
    quality_control = fields.Nested(QualityControlSchema, required=True, allow_none=True, metadata={
        "description": "The test that decided each rater's pass or fail and its threshold; null without qc_system."})
    warnings = fields.List(fields.String(), metadata={
        "description": "Present when the request could not be assessed as asked: a `reverse` entry that no "
                       "rating scores (it reverses nothing), or a `qc_system` that no rating holds (every rater "
                       "then fails quality control, and no system is ranked)."})


class ErrorBodySchema(StrictSchema):
    code = fields.String(required=True)
    message = fields.String(required=True)
    details = fields.Dict(required=True)


class ErrorSchema(StrictSchema):
    error = fields.Nested(ErrorBodySchema, required=True)


ITEM = ItemSchema()
DIALOGUE = DialogueSchema()
SCORE_REQUEST = ScoreRequestSchema()
RERANK_REQUEST = RerankRequestSchema()
CORRELATE_REQUEST = CorrelateRequestSchema()
HUMAN_EVAL_REQUEST = HumanEvalRequestSchema()


def parse_item(raw: dict[str, Any], kind: str, *, unknown: str = RAISE) -> Item | Dialogue:
    """One /score item (a bulk line too) as the typed value a model of `kind` scores: a Dialogue for
    `dialogue` models, else an Item; marshmallow's ValidationError where it breaks the schema.
    `unknown=EXCLUDE` ignores keys the schema does not know (a corpus line's own fields)."""
    return (DIALOGUE if kind == "dialogue" else ITEM).load(raw, unknown=unknown)


def flatten_messages(messages: object, prefix: str = "") -> dict[str, str]:
    """marshmallow's nested error dict -> {"items.3.reference": "message"} as the contract asks, in one
    order: item indices by number, names alphabetically (marshmallow lists unknown fields in the order
    of a set, which follows each process's string hashing)."""
    out: dict[str, str] = {}
    if isinstance(messages, dict):
        for key, value in sorted(messages.items(), key=lambda entry: (isinstance(entry[0], str), entry[0])):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key == "value" and prefix.count(".") >= 1:  # marshmallow Dict values: scores.a.value.1 -> scores.a.1
                path = prefix
            if key == "_schema":
                path = prefix or "_schema"
            out.update(flatten_messages(value, path))
    elif isinstance(messages, list):
        if all(isinstance(m, str) for m in messages):
            out[prefix or "_schema"] = " ".join(messages)
        else:
            for value in messages:
                out.update(flatten_messages(value, prefix))
    else:
        out[prefix or "_schema"] = str(messages)
    return out
