"""What the endpoints do, apart from HTTP: validated request in, response body out.

Kept out of the blueprints so that the bulk scorer and tests can call the same logic.
"""
from __future__ import annotations

import time
from typing import Any

from marshmallow import ValidationError

from service import limits, metrics, worker_readiness
from service.config import Settings
from service.errors import InvalidRequest, NotReady, UnknownModel
from service.schemas import DIALOGUE, ITEM, flatten_messages
from service.scorers.base import Dialogue, EncodeCache, Item, OptionError, Scorer, Turn, lacks_reference
from service.store import STORE_KEY, ModelStore


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
                parsed.append(Item(list(data["context"]), data["response"], data["reference"]))
        except ValidationError as exc:
            errors.update(flatten_messages(exc.messages, f"items.{i}"))
    if errors:
        raise InvalidRequest("Some items are invalid; see details for each field.", errors)
    return parsed


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


def score(store: ModelStore, body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    if "model" in body:
        scorer = get_scorer(store, body["model"])
        items = parse_items(body["items"], [scorer])
        limits.check_encoder_work([scorer], items, settings)
        scores, details = run_scorer(scorer, items, body["options"], EncodeCache())
        out: dict[str, Any] = {"model": scorer.name, "version": scorer.version, "scores": scores}
        if details is not None:
            out["details"] = details
        return out
    names = list(dict.fromkeys(body["models"]))
    scorers = [get_scorer(store, n) for n in names]
    items = parse_items(body["items"], scorers)
    limits.check_encoder_work(scorers, items, settings)
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
        results[scorer.name] = {"model": scorer.name, "version": scorer.version, "scores": scores}
        if details is not None:
            results[scorer.name]["details"] = details
    # The contract's `model` and `version` on every scoring response, for all the models at once;
    # each result below carries its own as well.
    return {"model": ",".join(names), "version": ",".join(f"{s.name}={s.version}" for s in scorers),
            "models": names, "results": results}


def rerank(store: ModelStore, body: dict[str, Any], settings: Settings) -> dict[str, Any]:
    scorer = get_scorer(store, body["model"])
    if scorer.kind == "dialogue":
        raise InvalidRequest(f"{scorer.name} scores whole dialogues and cannot rerank replies.",
                             {"model": "Not a reply model."})
    if scorer.reads_reference and lacks_reference(body["reference"]):
        raise InvalidRequest(f"{scorer.name} needs a reference.",
                             {"reference": "Required, and not blank, by this model."})
    items = [Item(list(body["context"]), candidate, body["reference"]) for candidate in body["candidates"]]
    limits.check_encoder_work([scorer], items, settings, path="candidates")
    scores, _ = run_scorer(scorer, items, body["options"], EncodeCache())
    order = sorted(range(len(items)), key=lambda i: -scores[i])  # stable: ties keep the candidates' order
    if body["top_k"] is not None:
        order = order[: body["top_k"]]
    return {"model": scorer.name, "version": scorer.version,
            "ranking": [{"index": i, "response": body["candidates"][i], "score": scores[i]} for i in order]}


def readiness(store: ModelStore, settings: Settings) -> tuple[bool, dict[str, Any]]:
    if not store.loaded:
        return False, {"loading": True, "loaded": sorted(store.scorers)}
    if store.failures:
        return False, {"failed": dict(sorted(store.public_failures.items())), "loaded": sorted(store.scorers)}
    pod = worker_readiness.pod_status()
    if pod is not None and pod[0] < pod[1]:
        return False, {"loading": True, "workers_ready": pod[0], "workers": pod[1]}
    details: dict[str, Any] = {"models": sorted(store.scorers)}
    if pod is not None:
        details.update({"workers_ready": pod[0], "workers": pod[1]})
    return True, details
