"""What the endpoints do, apart from HTTP: validated request in, response body out.

Kept out of the blueprints so that the bulk scorer and tests can call the same logic.
"""
from __future__ import annotations

import time
from typing import Any

from marshmallow import ValidationError

from service import metrics
from service.api import limits
from service.api.schemas import DIALOGUE, ITEM, flatten_messages
from service.components.cache import EncodeCache
from service.config import Settings
from service.errors import InvalidRequest, NotReady, UnknownModel
from service.scorers.base import Dialogue, Item, OptionError, Scorer, Turn, lacks_reference
from service.server.readiness import pod_status
from service.store.model_store import STORE_KEY, ModelStore


def get_scorer(store: ModelStore, name: str) -> Scorer:
    if not store.loaded:
        raise NotReady("Models are still loading; retry shortly.", {"loading": True})
    scorer = store.get(name)
    if scorer is None:
        if STORE_KEY in store.failures:  # nothing was read: every model is out, whatever its name
            raise NotReady("The model store failed to load on this server; the service log has the reason.",
                           {"model": name, "reason": store.public_failures[STORE_KEY]})
        if name in store.public_failures and name not in store.failed_components:
            # 503, not 404: the name is right and the fault is the server's (API.md: `not_ready`, models
            # not loaded). A 404 told a client its request was wrong; a load balancer retries a 503 on
            # another pod, where the model may have loaded (this pod's /readyz is 503 too).
            raise NotReady(f"Model {name!r} failed to load on this server and is not served; the service log "
                           "has the reason.", {"model": name, "reason": store.public_failures[name]})
        raise UnknownModel(f"No model named {name!r}; GET /models lists the served ones.",
                           {"model": name, "served": sorted(store.scorers)})
    return scorer


def parse_items(raw_items: list[dict[str, Any]], scorers: list[Scorer]) -> list[Item] | list[Dialogue]:
    """Validate each item against the kind of model asked for; errors keyed `items.<i>.<field>`."""
    parsed, errors = _parse_each(raw_items, scorers)
    if errors:
        raise InvalidRequest("Some items are invalid; see details for each field.", errors)
    return parsed


def _parse_each(raw_items: list[dict[str, Any]], scorers: list[Scorer]) -> tuple[list[Any], dict[str, str]]:
    """Every item parsed (None where invalid) and every invalid item's errors, keyed `items.<i>.<field>`."""
    kinds = {s.kind for s in scorers}
    if "dialogue" in kinds and len(kinds) > 1:
        raise InvalidRequest("Dialogue models and reply models cannot score the same items.",
                             {"models": "Mixes dialogue and reply models."})
    errors: dict[str, str] = {}
    parsed: list[Any] = []
    needs_reference = [s.name for s in scorers if s.reads_reference]
    for i, raw in enumerate(raw_items):
        try:
            if "dialogue" in kinds:
                data = DIALOGUE.load(raw)
                parsed.append(Dialogue([Turn(t["speaker"], t["text"]) for t in data["turns"]]))
            else:
                data = ITEM.load(raw)
                if needs_reference and lacks_reference(data["reference"]):
                    errors[f"items.{i}.reference"] = (f"Required, and not blank, by {', '.join(needs_reference)} "
                                                      "(a referenced model).")
                    parsed.append(None)
                else:
                    parsed.append(Item(list(data["context"]), data["response"], data["reference"]))
        except ValidationError as exc:
            errors.update(flatten_messages(exc.messages, f"items.{i}"))
            parsed.append(None)
    return parsed, errors


def _item_index(path: str) -> int:
    """`items.3.context.0` (or `candidates.3`) -> 3."""
    return int(path.split(".")[1])


def _kept_items(raw_items: list[dict[str, Any]], scorers: list[Scorer], over_limits: dict[str, str],
                ) -> tuple[list[Any], list[int], dict[str, str]]:
    """`on_invalid: "skip"`: the items that can be scored, their indices, and the others' errors.

    With nothing left to score the request fails with the status it would have without "skip" (413
    where an item is over the limits, else 422), its details naming every item's problems, so
    "skip" changes the status only where something is scored."""
    parsed, errors = _parse_each(raw_items, scorers)
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


def run_scorer(scorer: Scorer, items: list[Any], options: dict[str, Any] | None, cache: EncodeCache,
               option_path: str = "options") -> tuple[list[float], list[dict[str, Any]] | None]:
    try:
        resolved = scorer.resolve_options(options)
    except OptionError as exc:
        fields = {k.replace("options", option_path, 1): v for k, v in exc.fields.items()}
        raise InvalidRequest(f"Invalid options for model {scorer.name!r}.", fields) from None
    started = time.perf_counter()
    batch = scorer.score(items, resolved, cache)
    metrics.MODEL_SECONDS.labels(scorer.name).observe(time.perf_counter() - started)
    metrics.ITEMS.labels(scorer.name).inc(len(items))
    metrics.BATCH.labels(scorer.name).observe(len(items))
    return batch.scores, batch.details


def score(store: ModelStore, body: dict[str, Any], settings: Settings,
          over_limits: dict[str, str] | None = None) -> dict[str, Any]:
    """/score. `over_limits`: the items' own excess that `limits.check_items` returned under
    `on_invalid: "skip"`; those items are left out with the invalid ones, their scores null."""
    skip = body.get("on_invalid") == "skip"
    names = [body["model"]] if "model" in body else list(dict.fromkeys(body["models"]))
    scorers = [get_scorer(store, n) for n in names]
    total = len(body["items"])
    if skip:
        items, kept, errors = _kept_items(body["items"], scorers, over_limits or {})
    else:
        items, kept, errors = parse_items(body["items"], scorers), list(range(total)), {}
    limits.check_encoder_work(scorers, items, settings)
    if "model" in body:
        scorer = scorers[0]
        scores, details = run_scorer(scorer, items, body["options"], EncodeCache())
        out: dict[str, Any] = {"model": scorer.name, "version": scorer.version,
                               "scores": _spread(scores, kept, total)}
        if details is not None:
            out["details"] = _spread(details, kept, total)
        return _with_skipped(out, errors, "/score")
    options = body["options"]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise InvalidRequest("With `models`, options are keyed by model name.",
                             {f"options.{k}": "Not one of the requested models." for k in unknown})
    cache = EncodeCache()  # shared: each distinct utterance is encoded once across the models
    results = {}
    for scorer in scorers:
        if not isinstance(options.get(scorer.name, {}), dict):
            raise InvalidRequest("Options must be objects.", {f"options.{scorer.name}": "Must be an object."})
        scores, details = run_scorer(scorer, items, options.get(scorer.name), cache, f"options.{scorer.name}")
        results[scorer.name] = {"model": scorer.name, "version": scorer.version,
                                "scores": _spread(scores, kept, total)}
        if details is not None:
            results[scorer.name]["details"] = _spread(details, kept, total)
    # The contract's `model` and `version` on every scoring response, for all the models at once;
    # each result below carries its own as well.
    return _with_skipped({"model": ",".join(names), "version": ",".join(f"{s.name}={s.version}" for s in scorers),
                          "models": names, "results": results}, errors, "/score")


def _with_skipped(out: dict[str, Any], errors: dict[str, str], endpoint: str) -> dict[str, Any]:
    """Under `on_invalid: "skip"` the answer says which items were left out and why."""
    if errors:
        out["skipped"] = sorted({_item_index(path) for path in errors})
        out["errors"] = errors
        metrics.SKIPPED.labels(endpoint).inc(len(out["skipped"]))
    return out


def rerank(store: ModelStore, body: dict[str, Any], settings: Settings,
           over_limits: dict[str, str] | None = None) -> dict[str, Any]:
    """/rerank. `over_limits`: the over-long candidates `limits.check_rerank` returned under
    `on_invalid: "skip"`; they are left out of the ranking and named in `skipped` and `errors`."""
    scorer = get_scorer(store, body["model"])
    if scorer.kind == "dialogue":
        raise InvalidRequest(f"{scorer.name} scores whole dialogues and cannot rerank replies.",
                             {"model": "Not a reply model."})
    if scorer.reads_reference and lacks_reference(body["reference"]):
        raise InvalidRequest(f"{scorer.name} needs a reference.",
                             {"reference": "Required, and not blank, by this model."})
    errors = over_limits or {}
    if errors and len(errors) == len(body["candidates"]):  # nothing left: as without "skip"
        limits.refuse(errors)
    kept = [j for j in range(len(body["candidates"])) if f"candidates.{j}" not in errors]
    items = [Item(list(body["context"]), body["candidates"][j], body["reference"]) for j in kept]
    limits.check_encoder_work([scorer], items, settings, path="candidates")
    scores, _ = run_scorer(scorer, items, body["options"], EncodeCache())
    order = sorted(range(len(items)), key=lambda i: -scores[i])  # stable: ties keep the candidates' order
    if body["top_k"] is not None:
        order = order[: body["top_k"]]
    out = {"model": scorer.name, "version": scorer.version,
           "ranking": [{"index": kept[i], "response": body["candidates"][kept[i]], "score": scores[i]}
                       for i in order]}
    return _with_skipped(out, errors, "/rerank")


def readiness(store: ModelStore, settings: Settings) -> tuple[bool, dict[str, Any]]:
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
