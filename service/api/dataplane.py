"""The data plane: a request body the schema accepted in, a response body out, no HTTP.

Each handler looks every model up once, checks the limits (api/limits.py) where the contract
orders them (the items' sizes before the models, the encoder's work after the items parse), turns
items into the typed values scorers take once (schemas.parse_item, which bulk calls too), resolves
options once, then runs the scorers.
"""
from __future__ import annotations

import time
from typing import Any

from flask import g, has_request_context
from marshmallow import ValidationError

from service import metrics
from service.api import limits
from service.api.schemas import flatten_messages, parse_item
from service.components.cache import EncodeCache
from service.config import Settings
from service.errors import InvalidRequest, NotReady, UnknownModel
from service.scorers.base import REFERENCE_FREE, Item, OptionError, Scorer, lacks_reference
from service.server.readiness import pod_status
from service.stats import StatsInputError, correlate as correlate_stats
from service.stats.human_eval import HumanEvalInputError, assess
from service.store.model_store import STORE_KEY, ModelStore

# Seconds a 503 asks a client to wait (`Retry-After`) while the models load, which takes seconds; a
# model that failed to load gets no Retry-After, since waiting will not load it.
LOADING_RETRY_AFTER_S = 1


# --- the models a request names ---------------------------------------------------------------
class Lookup:
    """The store read once for a request's model names: whether loading had finished, and each name's
    scorer (None where not served). `loaded` is read first: the store fills its scorers before it
    says it has loaded, so a name found missing then is missing for good."""

    def __init__(self, store: ModelStore, names: list[str], options: dict[str, Any] | None = None) -> None:
        """`options` by model name, raw: a model asked for its reference-free part is found as that part
        (Scorer.for_options), so the reference checks below and in the limits see what is scored."""
        self.store = store
        self.loaded = store.loaded
        self.found: dict[str, Scorer | None] = {}
        for name in names:
            scorer = store.get(name)
            self.found[name] = scorer.for_options((options or {}).get(name)) if scorer is not None else None

    def reads_reference(self) -> bool:
        """Whether a named model reads `reference`: the contract has the others ignore it, so its size
        limit does not apply to them. Names not (yet) served count as reading it; they fail later."""
        return any(scorer is None or scorer.reads_reference for scorer in self.found.values())

    def label_request(self) -> None:
        """The latency histogram's `model` label (app.py): a served model's name, "several", or "".

        Client-chosen strings never become label values: every unknown name would add a series for
        the life of the process (and one that is not valid Unicode broke GET /metrics).
        """
        if has_request_context():
            served = [name for name, scorer in self.found.items() if scorer is not None]
            g.model = "several" if len(served) > 1 else (served[0] if served else "")

    def served(self) -> list[Scorer]:
        """The scorers, in the order named; 503 while loading or for a model that failed to load, else 404."""
        return [self._served(name, scorer) for name, scorer in self.found.items()]

    def _served(self, name: str, scorer: Scorer | None) -> Scorer:
        if not self.loaded:
            raise NotReady("Models are still loading; retry shortly.", {"loading": True}, LOADING_RETRY_AFTER_S)
        if scorer is not None:
            return scorer
        store = self.store
        if STORE_KEY in store.failures:  # nothing was read: every model is out, whatever its name
            raise NotReady("The model store failed to load on this server; the service log has the reason.",
                           {"model": name, "reason": store.public_failures[STORE_KEY]})
        if name in store.not_built:  # permanent on this server, unlike a failure: 404 with the reason
            raise UnknownModel(f"Model {name!r} is not served on this server: it {store.not_built[name]}.",
                               {"model": name, "not_built": store.not_built[name]})
        if name in store.public_failures and name not in store.failed_components:
            # 503, not 404: the name is right and the fault is the server's (API.md: `not_ready`, models
            # not loaded); a load balancer retries a 503 on another pod, where the model may have loaded.
            raise NotReady(f"Model {name!r} failed to load on this server and is not served; the service log "
                           "has the reason.", {"model": name, "reason": store.public_failures[name]})
        raise UnknownModel(f"No model named {name!r}; GET /models lists the served ones.",
                           {"model": name, "served": sorted(store.scorers)})


# --- items ---------------------------------------------------------------------------------------
def reference_free_advice(store: ModelStore) -> str:
    """The sentences a referenced model's missing reference is answered with (API.md, /rerank): the
    served models that need none, which a live bot, having no reference, can call, and those whose
    reference-free part can be asked for alone."""
    names = store.reference_free()
    advice = (f"Models that need no reference: {', '.join(names)}." if names
              else "No model that needs no reference is served here.")
    parts = store.with_reference_free_part()
    if parts:
        advice += f" The reference-free part alone, with options.{REFERENCE_FREE} true: {', '.join(parts)}."
    return advice


def _options_by_name(options: Any) -> dict[str, Any]:
    """`models`' options keyed by model name, as far as they are that shape (_resolve_per_model refuses
    any other)."""
    return options if isinstance(options, dict) else {}


def _parse_each(raw_items: list[dict[str, Any]], scorers: list[Scorer]) -> tuple[list[Any], dict[str, str]]:
    """Every item parsed (None where invalid) and every invalid item's errors, keyed `items.<i>.<field>`."""
    kinds = {s.kind for s in scorers}
    if "dialogue" in kinds and len(kinds) > 1:
        raise InvalidRequest("Dialogue models and reply models cannot score the same items.",
                             {"models": "Mixes dialogue and reply models."})
    kind = "dialogue" if "dialogue" in kinds else "reply"
    needs_reference = [s.name for s in scorers if s.reads_reference]
    errors: dict[str, str] = {}
    parsed: list[Any] = []
    for i, raw in enumerate(raw_items):
        try:
            item = parse_item(raw, kind)
        except ValidationError as exc:
            errors.update(flatten_messages(exc.messages, f"items.{i}"))
            parsed.append(None)
            continue
        if needs_reference and isinstance(item, Item) and lacks_reference(item.reference):
            errors[f"items.{i}.reference"] = (f"Required, and not blank, by {', '.join(needs_reference)} "
                                              "(a referenced model).")
            parsed.append(None)
        else:
            parsed.append(item)
    return parsed, errors


def _item_index(path: str) -> int:
    """`items.3.context.0` (or `candidates.3`) -> 3."""
    return int(path.split(".")[1])


def _read_items(raw_items: list[dict[str, Any]], scorers: list[Scorer], skip: bool, over_limits: dict[str, str],
                ) -> tuple[list[Any], list[int], dict[str, str]]:
    """The items to score, their request positions, and (under `on_invalid: "skip"`) the errors of
    those left out, in item order. Without "skip" any invalid item fails the request (422).

    Under "skip", with nothing left to score the request fails with the status it would have without
    "skip" (413 where an item is over the limits, else 422), its details naming every item's problems,
    so "skip" changes the status only where something is scored."""
    parsed, errors = _parse_each(raw_items, scorers)
    if not skip:
        if errors:
            raise InvalidRequest("Some items are invalid; see details for each field.", errors)
        return parsed, list(range(len(raw_items))), {}
    errors = dict(sorted({**over_limits, **errors}.items(), key=lambda kv: _item_index(kv[0])))
    left_out = {_item_index(path) for path in errors}
    kept = [i for i in range(len(raw_items)) if i not in left_out]
    if not kept:
        if over_limits:
            limits.refuse(errors)
        raise InvalidRequest("Some items are invalid; see details for each field.", errors)
    return [parsed[i] for i in kept], kept, errors


def _spread(values: list[Any] | None, kept: list[int], total: int) -> list[Any] | None:
    """Scores (or details) of the kept items put back at their request positions, null elsewhere."""
    if values is None:
        return None
    out: list[Any] = [None] * total
    for position, value in zip(kept, values):
        out[position] = value
    return out


# --- options and scoring -------------------------------------------------------------------------
def _resolve(scorer: Scorer, options: dict[str, Any] | None, path: str = "options") -> dict[str, Any]:
    """The model's options with defaults filled in; 422 naming each bad one under `path`."""
    try:
        return scorer.resolve_options(options)
    except OptionError as exc:
        fields = {k.replace("options", path, 1): v for k, v in exc.fields.items()}
        raise InvalidRequest(f"Invalid options for model {scorer.name!r}.", fields) from None


def _resolve_per_model(scorers: list[Scorer], options: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    """`models`' options, keyed by model name, resolved for each model in the order named."""
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise InvalidRequest("With `models`, options are keyed by model name.",
                             {f"options.{k}": "Not one of the requested models." for k in unknown})
    resolved = []
    for scorer in scorers:
        if not isinstance(options.get(scorer.name, {}), dict):
            raise InvalidRequest("Options must be objects.", {f"options.{scorer.name}": "Must be an object."})
        resolved.append(_resolve(scorer, options.get(scorer.name), f"options.{scorer.name}"))
    return resolved


def _run(scorer: Scorer, items: list[Any], options: dict[str, Any], cache: EncodeCache,
         ) -> tuple[list[float], list[dict[str, Any]] | None]:
    started = time.perf_counter()
    batch = scorer.score_resolved(items, options, cache)
    metrics.MODEL_SECONDS.labels(scorer.name).observe(time.perf_counter() - started)
    metrics.ITEMS.labels(scorer.name).inc(len(items))
    metrics.BATCH.labels(scorer.name).observe(len(items))
    return batch.scores, batch.details


def _with_skipped(out: dict[str, Any], errors: dict[str, str], endpoint: str) -> dict[str, Any]:
    """Under `on_invalid: "skip"` the answer says which items were left out and why."""
    if errors:
        out["skipped"] = sorted({_item_index(path) for path in errors})
        out["errors"] = errors
        metrics.SKIPPED.labels(endpoint).inc(len(out["skipped"]))
    return out


# --- the handlers ----------------------------------------------------------------------------------
def score(store: ModelStore, body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """/score: the items' sizes (413), the models (503, 404), the items (422), the encoder's work
    (413), the options (422), in that order; then every model scores the items, sharing one cache."""
    single = "model" in body
    names = [body["model"]] if single else list(dict.fromkeys(body["models"]))
    lookup = Lookup(store, names, {names[0]: body["options"]} if single else _options_by_name(body["options"]))
    lookup.label_request()
    skip = body["on_invalid"] == "skip"
    over = limits.check_items(body["items"], settings, check_reference=lookup.reads_reference(), skip_items=skip)
    scorers = lookup.served()
    total = len(body["items"])
    items, kept, errors = _read_items(body["items"], scorers, skip, over)
    limits.check_encoder_work(scorers, items, settings)
    if single:
        options = [_resolve(scorers[0], body["options"])]
    else:
        options = _resolve_per_model(scorers, body["options"], names)
    cache = EncodeCache()  # shared: each distinct utterance is encoded once across the models
    results = []
    for scorer, resolved in zip(scorers, options):
        scores, details = _run(scorer, items, resolved, cache)
        result = {"model": scorer.name, "version": scorer.version, "scores": _spread(scores, kept, total)}
        if details is not None:
            result["details"] = _spread(details, kept, total)
        results.append(result)
    if single:
        return _with_skipped(results[0], errors, "/score")
    # The contract's `model` and `version` on every scoring response, for all the models at once;
    # each result carries its own as well.
    return _with_skipped({"model": ",".join(names), "version": ",".join(f"{s.name}={s.version}" for s in scorers),
                          "models": names, "results": {r["model"]: r for r in results}}, errors, "/score")


def rerank(store: ModelStore, body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """/rerank: the candidates, context and reference sizes (413), the model (503, 404), its kind and
    reference (422), the encoder's work (413), the options (422); then the ranking, best first.
    Under `on_invalid: "skip"` over-long candidates are left out and named in `skipped` and `errors`."""
    lookup = Lookup(store, [body["model"]], {body["model"]: body["options"]})
    lookup.label_request()
    errors = limits.check_rerank(body, settings, check_reference=lookup.reads_reference(),
                                 skip_candidates=body["on_invalid"] == "skip")
    (scorer,) = lookup.served()
    if scorer.kind == "dialogue":
        raise InvalidRequest(f"{scorer.name} scores whole dialogues and cannot rerank replies.",
                             {"model": "Not a reply model."})
    if scorer.reads_reference and lacks_reference(body["reference"]):
        raise InvalidRequest(f"{scorer.name} needs a reference. {reference_free_advice(store)}",
                             {"reference": "Required, and not blank, by this model."})
    if errors and len(errors) == len(body["candidates"]):  # nothing left: as without "skip"
        limits.refuse(errors)
    kept = [j for j in range(len(body["candidates"])) if f"candidates.{j}" not in errors]
    items = [Item(list(body["context"]), body["candidates"][j], body["reference"]) for j in kept]
    limits.check_encoder_work([scorer], items, settings, path="candidates")
    scores, _ = _run(scorer, items, _resolve(scorer, body["options"]), EncodeCache())
    order = sorted(range(len(items)), key=lambda i: -scores[i])  # stable: ties keep the candidates' order
    if body["top_k"] is not None:
        order = order[: body["top_k"]]
    out = {"model": scorer.name, "version": scorer.version,
           "ranking": [{"index": kept[i], "response": body["candidates"][kept[i]], "score": scores[i]}
                       for i in order]}
    return _with_skipped(out, errors, "/rerank")


def correlate(body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """/correlate: its sizes (413), then the statistics; numbers that cannot be correlated are 422."""
    limits.check_correlate(body, settings)
    try:
        return correlate_stats(body["human"], body["scores"], systems=body["systems"], methods=body["methods"],
                               confidence=body["confidence"], resamples=body["resamples"], seed=body["seed"])
    except StatsInputError as exc:
        raise InvalidRequest(str(exc) or "The numbers cannot be correlated as given.", exc.fields) from None


def human_eval(body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """/human-eval: its sizes (413), then Ji et al.'s assessment; ratings it cannot use are 422."""
    limits.check_human_eval(body, settings)
    try:
        return assess(body["ratings"], reverse=body["reverse"], scale=tuple(body["scale"]),
                      qc_system=body["qc_system"], alpha=body["alpha"], qc_criteria=body["qc_criteria"])
    except HumanEvalInputError as exc:
        raise InvalidRequest(str(exc) or "The ratings cannot be assessed as given.", exc.fields) from None


def readiness(store: ModelStore, settings: Settings) -> tuple[bool, dict[str, Any]]:
    """Whether this pod is ready (every configured model loaded, in every gunicorn worker), and why not."""
    if not store.loaded:
        return False, {"loading": True, "loaded": sorted(store.scorers)}
    if store.failures:
        return False, {"failed": dict(sorted(store.public_failures.items())), "loaded": sorted(store.scorers)}
    pod = pod_status()
    if pod is not None and pod[0] < pod[1]:
        return False, {"loading": True, "workers_ready": pod[0], "workers": pod[1]}
    details: dict[str, Any] = {"models": sorted(store.scorers)}
    if pod is not None:
        details.update({"workers_ready": pod[0], "workers": pod[1]})
    return True, details


def ready(store: ModelStore, settings: Settings) -> dict[str, Any]:
    """/readyz's body; 503 naming what is missing."""
    is_ready, details = readiness(store, settings)
    if is_ready:
        return {"status": "ready", **details}
    if "failed" in details:
        names = ", ".join(details["failed"])
        raise NotReady(f"Not ready: {names} failed to load; see details and the log.", details)
    if "workers" in details:
        raise NotReady(f"Not ready: {details['workers_ready']} of {details['workers']} workers have loaded "
                       "their models.", details, LOADING_RETRY_AFTER_S)
    raise NotReady("Not ready: models are still loading.", details, LOADING_RETRY_AFTER_S)


def models(store: ModelStore, settings: Settings) -> dict[str, Any]:
    """/models: the served models, the limits, the failures, and whether loading goes on."""
    return {"models": store.describe(), "limits": settings.limits(),
            "failed": dict(sorted(store.public_failures.items())), "not_built": dict(sorted(store.not_built.items())),
            "loading": not store.loaded}
