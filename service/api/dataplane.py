"""The data plane: a request body the schema accepted in, a response body out; no HTTP.

A handler reads the store once for the named models, checks the limits (api/limits.py) where the
contract orders them (the items' sizes before the models, the encoder's work after the items parse),
parses each item once into the typed value scorers take (schemas.parse_item, which bulk calls too),
resolves each model's options once into a Call, and runs the calls on one per-request cache, which
also holds each distinct text's tokens for the limits and the encoder. `keep_last` cuts contexts
before the limits; api/warnings.py names unreadable replies.
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from marshmallow import ValidationError

from service.observability import metrics, tracing
from service.api import limits
from service.api.schemas import RERANK_REQUEST, SCORE_REQUEST, element_errors, flatten_messages, parse_item
from service.api.warnings import count_warnings, reply_warnings
from service.components.cache import EncodeCache
from service.config import Settings
from service.errors import InvalidRequest, NotReady, ServiceError, UnknownModel
from service.scorers.base import REFERENCE_FREE, Call, Item, ScoreBatch, Scorer, lacks_reference
from service.stats import StatsInputError, correlate as correlate_stats
from service.stats.human_eval import HumanEvalInputError, assess
from service.store.model_store import LOADING_RETRY_AFTER_S, ModelStore
from service.store.readiness import pod_status, pod_was_ready
from service.version import TOOL, VERSION


# --- the models a request names ---------------------------------------------------------------
@dataclass
class Requested:
    """One model a request names, read from the store once: its scorer (None where not served), its
    options checked once (the valid ones, defaults filled) and their 422, raised in its turn."""

    name: str
    scorer: Scorer | None
    options: dict[str, Any]
    error: InvalidRequest | None = None

    @property
    def reads_reference(self) -> bool:
        """Whether its items need a `reference`, asked before the model is known to be served: a name
        not (yet) served counts as reading one (it fails later, with its own status)."""
        return self.scorer is None or Call(self.scorer, self.options).reads_reference

    def call(self, scorer: Scorer) -> Call:
        """The call with its options, or their 422."""
        if self.error is not None:
            raise self.error
        return Call(scorer, self.options)


def _requested(store: ModelStore, name: str, options: Any, path: str) -> Requested:
    scorer = store.get(name)
    if scorer is None:
        return Requested(name, None, {})
    if not isinstance(options, dict):
        return Requested(name, scorer, {}, InvalidRequest("Options must be objects.", {path: "Must be an object."}))
    valid, errors = scorer.check_options(options)
    if not errors:
        return Requested(name, scorer, valid)
    fields = {k.replace("options", path, 1): v for k, v in errors.items()}
    return Requested(name, scorer, valid, InvalidRequest(f"Invalid options for model {name!r}.", fields))


def _label(requested: list[Requested]) -> None:
    """The latency histogram's `model` label: a served model's name, "several", or "". Client-chosen
    strings never become label values (each unknown name would add a series for the process's life)."""
    served = [r.name for r in requested if r.scorer is not None]
    metrics.label_request_model("several" if len(served) > 1 else (served[0] if served else ""))


def _served(store: ModelStore, requested: list[Requested], listed: list[Any] | None = None) -> list[Call]:
    """The named models in order, with the options that validated: 503 or 404 for one not served
    (ModelStore.served), whose details also name its place in `listed` (a body's `models`) where given.
    The options' own 422 is `_resolved`'s."""
    calls = []
    for r in requested:
        try:
            calls.append(Call(store.served(r.name), r.options))
        except UnknownModel as exc:
            if listed is not None:
                exc.details = {**exc.details, f"models.{listed.index(r.name)}": "Not a model served here."}
            raise
    return calls


def _resolved(requested: list[Requested], calls: list[Call], unknown_options: list[str]) -> list[Call]:
    """The calls once their options are checked: 422 for keys naming no requested model, then for each
    model's options in the order named."""
    if unknown_options:
        raise InvalidRequest("With `models`, options are keyed by model name.",
                             {f"options.{k}": "Not one of the requested models." for k in unknown_options})
    return [r.call(call.scorer) for r, call in zip(requested, calls)]


# --- items ---------------------------------------------------------------------------------------
def reference_free_advice(store: ModelStore) -> str:
    """The sentences a referenced model's missing reference is answered with (API.md, /rerank): the
    served models that need none, and those whose reference-free part can be asked for alone."""
    names = store.reference_free()
    advice = (f"Models that need no reference: {', '.join(names)}." if names
              else "No model that needs no reference is served here.")
    parts = store.with_reference_free_part()
    if parts:
        advice += f" The reference-free part alone, with options.{REFERENCE_FREE} true: {', '.join(parts)}."
    return advice


def _item_kind(calls: list[Call]) -> str:
    """"dialogue" or "reply": what the named models score; 422 where they mix the two."""
    kinds = {c.kind for c in calls}
    if "dialogue" in kinds and len(kinds) > 1:
        raise InvalidRequest("Dialogue models and reply models cannot score the same items.",
                             {"models": "Mixes dialogue and reply models."})
    return "dialogue" if "dialogue" in kinds else "reply"


def _parse_each(raw_items: list[dict[str, Any]], calls: list[Call], kind: str,
                ) -> tuple[list[Any], dict[str, str]]:
    """Every item parsed (None where invalid) and every invalid item's errors, keyed `items.<i>.<field>`."""
    needs_reference = [c.name for c in calls if c.reads_reference]
    errors = element_errors(SCORE_REQUEST, "items", raw_items)  # not a JSON object
    parsed: list[Any] = []
    for i, raw in enumerate(raw_items):
        if f"items.{i}" in errors:
            parsed.append(None)
            continue
        try:
            item = parse_item(raw, kind)
        except ValidationError as exc:
            errors.update(flatten_messages(exc.messages, f"items.{i}"))
            parsed.append(None)
            continue
        problems: dict[str, str] = {}
        for call in calls:
            if (found := call.item_problem(item)) is not None:
                problems[f"items.{i}.{found[0]}"] = found[1]
        if needs_reference and isinstance(item, Item) and lacks_reference(item.reference):
            problems[f"items.{i}.reference"] = (f"Required, and not blank, by {', '.join(needs_reference)} "
                                                + ("(a referenced model)." if len(needs_reference) == 1
                                                   else "(referenced models)."))
        errors.update(problems)
        parsed.append(None if problems else item)
    return parsed, errors


def _item_index(path: str) -> int:
    """`items.3.context.0` (or `candidates.3`) -> 3."""
    return int(path.split(".")[1])


def _in_item_order(errors: dict[str, str]) -> dict[str, str]:
    return dict(sorted(errors.items(), key=lambda kv: _item_index(kv[0])))


def _read_items(raw_items: list[dict[str, Any]], calls: list[Call], kind: str, skip: bool,
                over_limits: dict[str, str]) -> tuple[list[Any], list[int], dict[str, str]]:
    """The items to score, their request positions, and (under `on_invalid: "skip"`) the errors of
    those left out, in item order. Without "skip" any invalid item fails the request (422).

    Under "skip", with nothing left to score the request fails with the status it would have without
    "skip" (413 where an item is over the limits, else 422), its details naming every item's problems,
    so "skip" changes the status only where something is scored."""
    parsed, errors = _parse_each(raw_items, calls, kind)
    if not skip:
        if errors:
            raise InvalidRequest("Some items are invalid; see details for each field.", _in_item_order(errors))
        return parsed, list(range(len(raw_items))), {}
    errors = _in_item_order({**over_limits, **errors})
    left_out = {_item_index(path) for path in errors}
    kept = [i for i in range(len(raw_items)) if i not in left_out]
    if not kept:
        _refuse_every(errors, bool(over_limits), "items")
    return [parsed[i] for i in kept], kept, errors


def _refuse_every(errors: dict[str, str], over_a_limit: bool, what: str) -> NoReturn:
    """Under "skip" with nothing left to score: the status the request has without "skip" (413 where
    one is over a limit, else 422), naming every problem."""
    if over_a_limit:
        limits.refuse(errors)
    raise InvalidRequest(f"Some {what} are invalid; see details for each field.", errors)


def _spread(values: list[Any] | None, kept: list[int], total: int) -> list[Any] | None:
    """Scores (or details) of the kept items put back at their request positions, null elsewhere."""
    if values is None:
        return None
    out: list[Any] = [None] * total
    for position, value in zip(kept, values):
        out[position] = value
    return out


# --- long contexts ---------------------------------------------------------------------------------
def turns_kept(requested: list[Requested], settings: Settings) -> int:
    """Under `on_long_context: "keep_last"`: the context turns kept, the most any named reply model reads
    (Scorer.context_turns; the turn limit for one that reads every turn, or where none is served yet), at
    least one (a context is never empty) and at most the limit."""
    reads = [r.scorer.context_turns for r in requested if r.scorer is not None and r.scorer.kind != "dialogue"]
    most = max((settings.max_turns if n is None else n for n in reads), default=settings.max_turns)
    return max(1, min(most, settings.max_turns))


def _keep_last(context: Any, keep: int) -> tuple[Any, int]:
    """The context's last `keep` turns and how many were dropped; anything not a list as it came."""
    if not isinstance(context, list) or len(context) <= keep:
        return context, 0
    return context[-keep:], len(context) - keep


def _trim_items(items: list[Any], keep: int) -> tuple[list[Any], list[int]]:
    """Each item with its context cut to its last `keep` turns, and the turns dropped from each."""
    trimmed, dropped = [], []
    for item in items:
        if isinstance(item, dict) and "context" in item:
            context, n = _keep_last(item["context"], keep)
            item = {**item, "context": context}
        else:
            n = 0
        trimmed.append(item)
        dropped.append(n)
    return trimmed, dropped


_CONTEXT_TURN = re.compile(r"(items\.(\d+)\.)?context\.(\d+)")


def sent_paths(details: dict[str, Any], dropped: list[int] | int | None) -> dict[str, Any]:
    """Error paths as the client sent the context: after `keep_last` cut it, a turn's index there counts
    the `dropped` turns (per item, or of /rerank's one context) too."""
    if not dropped:
        return details

    def sent(path: str) -> str:
        match = _CONTEXT_TURN.match(path)
        if match is None:
            return path
        before = dropped if isinstance(dropped, int) else dropped[int(match.group(2))] if match.group(1) else 0
        return f"{match.group(1) or ''}context.{int(match.group(3)) + before}{path[match.end():]}"

    return {sent(path): value for path, value in details.items()}


@contextmanager
def paths_as_sent(dropped: list[int] | int | None) -> Iterator[None]:
    """Errors raised within name the context's turns as the client sent them (sent_paths)."""
    try:
        yield
    except ServiceError as error:
        error.details = sent_paths(error.details, dropped)
        raise


def _with_warnings(out: dict[str, Any], warnings: list[dict[str, Any]]) -> dict[str, Any]:
    if warnings:
        out["warnings"] = warnings
    return out


# --- scoring -------------------------------------------------------------------------------------
def _run(call: Call, items: list[Any], cache: EncodeCache) -> ScoreBatch:
    started = time.perf_counter()
    with tracing.span("model", model=call.name, version=call.version, items=len(items)):
        batch = call.score(items, cache=cache)
    metrics.MODEL_SECONDS.labels(call.name).observe(time.perf_counter() - started)
    metrics.ITEMS.labels(call.name).inc(len(items))
    metrics.BATCH.labels(call.name).observe(len(items))
    return batch


def _with_skipped(out: dict[str, Any], errors: dict[str, str], endpoint: str) -> dict[str, Any]:
    """Under `on_invalid: "skip"` the answer says which items were left out and why."""
    if errors:
        out["skipped"] = sorted({_item_index(path) for path in errors})
        out["errors"] = errors
        metrics.SKIPPED.labels(endpoint).inc(len(out["skipped"]))
    return out


# --- the handlers ----------------------------------------------------------------------------------
@tracing.traced("dataplane.score")
def score(store: ModelStore, body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """/score: the items' sizes (413), the models (503, 404), the options (422), the items (422), the
    encoder's work (413), in that order; then every model scores the items, sharing one cache. The options
    come before the items: they decide whether an item needs a reference."""
    single = "model" in body
    names = [body["model"]] if single else list(dict.fromkeys(body["models"]))
    options = {names[0]: body["options"]} if single else body["options"]
    requested = [_requested(store, name, options.get(name, {}), "options" if single else f"options.{name}")
                 for name in names]
    _label(requested)
    skip = body["on_invalid"] == "skip"
    dropped: list[int] | None = None
    if body["on_long_context"] == "keep_last":
        trimmed, dropped = _trim_items(body["items"], turns_kept(requested, settings))
        body = {**body, "items": trimmed}
    with paths_as_sent(dropped):
        over = limits.check_items(body["items"], settings, check_reference=any(r.reads_reference for r in requested),
                                  skip_items=skip)
        calls = _resolved(requested, _served(store, requested, None if single else body["models"]),
                          [] if single else sorted(set(options) - set(names)))
        total = len(body["items"])
        items, kept, errors = _read_items(body["items"], calls, _item_kind(calls), skip, over)
        cache = EncodeCache()  # shared: each distinct utterance is tokenised and encoded once across the models
        limits.check_encoder_work(calls, items, settings, cache)
    errors = sent_paths(errors, dropped)
    results = []
    for call in calls:
        batch = _run(call, items, cache)
        result = {"model": call.name, "version": call.version, "scores": _spread(batch.scores, kept, total)}
        if batch.details is not None:
            result["details"] = _spread(batch.details, kept, total)
        if batch.human_percentile is not None:
            result["human_percentile"] = _spread(batch.human_percentile, kept, total)
        keys = store.trained.get(call.name)
        trained = [i for i, item in zip(kept, items) if keys and isinstance(item, Item) and keys.holds(item.context,
                                                                                                     item.response)]
        if trained:
            result["trained"] = trained
        results.append(result)
    if single:
        out = results[0]
    else:
        # The contract's `model` and `version` on every scoring response, for all the models at once;
        # each result carries its own as well.
        out = {"model": ",".join(names), "version": ",".join(f"{c.name}={c.version}" for c in calls),
               "models": names, "results": {r["model"]: r for r in results}}
    if dropped is not None:
        out["context_dropped"] = dropped
    replies = [(i, item.response) for i, item in zip(kept, items) if isinstance(item, Item)]
    return _with_warnings(_with_skipped(out, errors, "/score"),
                          reply_warnings(replies, settings.not_english_confidence, "/score"))


@tracing.traced("dataplane.rerank")
def rerank(store: ModelStore, body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """/rerank: the candidates, context and reference sizes (413), the model (503, 404), the options
    (422; they decide whether a reference is needed), its kind and reference (422), the candidates that
    are not strings (422), the encoder's work (413); then the ranking, best first.
    Under `on_invalid: "skip"` over-long candidates and those not a string are left out and named in
    `skipped` and `errors`."""
    requested = [_requested(store, body["model"], body["options"], "options")]
    _label(requested)
    dropped: int | None = None
    if body["on_long_context"] == "keep_last":
        context, dropped = _keep_last(body["context"], turns_kept(requested, settings))
        body = {**body, "context": context}
    with paths_as_sent(dropped):
        over = limits.check_rerank(body, settings, check_reference=requested[0].reads_reference,
                                   skip_candidates=body["on_invalid"] == "skip")
    (call,) = _resolved(requested, _served(store, requested), [])
    if call.kind == "dialogue":
        raise InvalidRequest(f"{call.name} scores whole dialogues and cannot rerank replies.",
                             {"model": "Not a reply model."})
    if call.reads_reference and lacks_reference(body["reference"]):
        raise InvalidRequest(f"{call.name} needs a reference. {reference_free_advice(store)}",
                             {"reference": "Required, and not blank, by this model."})
    malformed = element_errors(RERANK_REQUEST, "candidates", body["candidates"])  # not a JSON string
    if malformed and body["on_invalid"] != "skip":
        raise InvalidRequest("Some candidates are invalid; see details for each field.", malformed)
    errors = _in_item_order({**over, **malformed})
    if len(errors) == len(body["candidates"]):
        _refuse_every(errors, bool(over), "candidates")
    kept = [j for j in range(len(body["candidates"])) if f"candidates.{j}" not in errors]
    items = [Item(list(body["context"]), body["candidates"][j], body["reference"]) for j in kept]
    # as scored: in NFC (scorers/base.py, Item)
    warned = reply_warnings([(j, item.response) for j, item in zip(kept, items)], settings.not_english_confidence,
                            "/rerank", counted=False)  # counted once answered: a 413 below would count them
    excluded = {w["index"] for w in warned if w["code"] in body["exclude_warned"]}
    kept, items = [j for j in kept if j not in excluded], [item for j, item in zip(kept, items) if j not in excluded]
    cache = EncodeCache()
    limits.check_encoder_work([call], items, settings, cache, path="candidates")
    batch = _run(call, items, cache) if items else ScoreBatch([])
    scores = batch.scores
    order = sorted(range(len(items)), key=lambda i: -scores[i])  # stable: ties keep the candidates' order
    if body["top_k"] is not None:
        order = order[: body["top_k"]]
    ranking = [{"index": kept[i], "response": body["candidates"][kept[i]], "score": scores[i]} for i in order]
    for entry, i in zip(ranking, order):
        if batch.human_percentile is not None:
            entry["human_percentile"] = batch.human_percentile[i]
        if batch.details is not None:  # as /score gives them: why a candidate ranked where it did
            entry["details"] = batch.details[i]
    out = {"model": call.name, "version": call.version, "ranking": ranking}
    if dropped is not None:
        out["context_dropped"] = dropped
    count_warnings(warned, "/rerank")
    return _with_warnings(_with_skipped(out, errors, "/rerank"), warned)


def correlate(body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """/correlate: its sizes (413), then the statistics; numbers that cannot be correlated are 422."""
    limits.check_correlate(body, settings)
    try:
        return {TOOL: VERSION, **correlate_stats(
            body["human"], body["scores"], systems=body["systems"], methods=body["methods"],
            confidence=body["confidence"], resamples=body["resamples"], seed=body["seed"],
            system_resampling=body["system_resampling"], inputs=body["inputs"],
            item_resampling=body["item_resampling"])}
    except StatsInputError as exc:
        raise InvalidRequest(str(exc) or "The numbers cannot be correlated as given.", exc.fields) from None


def human_eval(body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """/human-eval: its sizes (413), then Ji et al.'s assessment; ratings it cannot use are 422."""
    limits.check_human_eval(body, settings)
    try:
        return {TOOL: VERSION, **assess(body["ratings"], reverse=body["reverse"], scale=tuple(body["scale"]),
                                        qc_system=body["qc_system"], alpha=body["alpha"], qc_criteria=body["qc_criteria"])}
    except HumanEvalInputError as exc:
        raise InvalidRequest(str(exc) or "The ratings cannot be assessed as given.", exc.fields) from None


def readiness(store: ModelStore) -> tuple[bool, dict[str, Any]]:
    """Whether this pod is ready, and why not: once every worker has loaded its models, then while any
    serves (service/store/readiness.py)."""
    loaded = store.loaded  # before the markers: a store seen loaded has written its own (ModelStore.load)
    if not loaded:
        return False, {"loading": True, "loaded": sorted(store.scorers)}
    if store.failures:
        return False, {"failed": dict(sorted(store.public_failures.items())), "loaded": sorted(store.scorers)}
    details: dict[str, Any] = {"models": sorted(store.scorers)}
    if (pod := pod_status()) is not None:
        details.update({"workers_ready": pod[0], "workers": pod[1]})
        if pod[0] < pod[1] and not pod_was_ready():
            return False, {"loading": True, **details}
    return True, details


def ready(store: ModelStore) -> dict[str, Any]:
    """/readyz's body; 503 naming what is missing."""
    is_ready, details = readiness(store)
    if is_ready:
        return {"status": "ready", **details}
    if "failed" in details:
        names = ", ".join(details["failed"])
        raise NotReady(f"Not ready: {names} failed to load; see details and the log.", details)
    workers = f" ({details['workers_ready']} of {details['workers']} workers have loaded)" if "workers" in details else ""
    raise NotReady(f"Not ready: models are still loading{workers}.", details, LOADING_RETRY_AFTER_S)


def models(store: ModelStore, settings: Settings) -> dict[str, Any]:
    """/models: the served models, the limits, the failures, and whether loading goes on."""
    return {"models": store.describe(), "limits": settings.limits(),
            "failed": dict(sorted(store.public_failures.items())), "not_built": dict(sorted(store.not_built.items())),
            "loading": not store.loaded}
